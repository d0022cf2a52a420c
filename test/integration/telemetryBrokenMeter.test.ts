import { describe, expect, it, vi } from 'vitest';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { useTelemetrySdk } from '../support/telemetrySdk.js';
import { aKey, aRequest } from '../support/charges.js';

// A file of its own: the engine says a telemetry failure once per process, and this test checks
// that it is said.

const sdk = useTelemetrySdk();
const { tracerProvider, named } = sdk;

describe('a meter that throws as the engine makes its instruments', () => {
  it('never fails a charge: said once on console.warn, spans still recorded', async () => {
    const meter = {
      createCounter: () => ({ add() {} }),
      createHistogram: () => {
        throw new Error('no histograms here');
      },
      createObservableGauge: () => ({ addCallback() {}, removeCallback() {} }),
      addBatchObservableCallback() {},
      removeBatchObservableCallback() {},
    };
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const engine = createChargeEngine({
        pool: sdk.db.pgPool,
        provider: createFakeProvider(),
        telemetry: { tracer: tracerProvider.getTracer('test'), meter },
      });

      const outcomes = [
        await engine.processCharge(aKey(), aRequest()),
        await engine.processCharge(aKey(), aRequest()),
      ];
      await engine.close();

      expect(outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded']);
      expect(named('chargeonce.process_charge')).toHaveLength(2);
      const said = warn.mock.calls.filter((call) =>
        String(call[0]).includes('recording telemetry failed'),
      );
      expect(said).toHaveLength(1);
      expect(said[0]?.[1]).toMatchObject({ message: 'no histograms here' });
    } finally {
      warn.mockRestore();
    }
  });
});
