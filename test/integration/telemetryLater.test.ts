import { describe, expect, it, vi } from 'vitest';
import type { Span, Tracer } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createChargeEngine, type ChargeEngineOptions } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { useTelemetrySdk } from '../support/telemetrySdk.js';
import { aKey, aRequest, waitFor } from '../support/charges.js';

// Calls that end while others are in flight record their spans and points a turn or two later
// (off the path of the next batch): all of them, with the times they happened at.

const sdk = useTelemetrySdk();
const { spans, tracerProvider, named, histogramCount } = sdk;

function engineWith(tracer: Tracer, options: Partial<ChargeEngineOptions> = {}) {
  return createChargeEngine({
    pool: sdk.db.pgPool,
    provider: createFakeProvider(),
    sweepGraceMs: 0,
    telemetry: { tracer, meter: sdk.meter() },
    ...options,
  });
}

const ms = ([seconds, nanos]: [number, number]) => seconds * 1e3 + nanos / 1e6;
const childrenOf = (parent: ReadableSpan) =>
  spans
    .getFinishedSpans()
    .filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId);

describe('telemetry recorded after the call', () => {
  it('concurrent calls: every span, under its own call, in the order and times its steps ran', async () => {
    const engine = engineWith(tracerProvider.getTracer('test'));
    const calls = 8;
    await Promise.all(
      Array.from({ length: calls }, () => engine.processCharge(aKey(), aRequest())),
    );
    // Every point is recorded, whether its call recorded at once or later.
    expect(await histogramCount('chargeonce.process_charge.duration')).toBe(calls);
    expect(await histogramCount('chargeonce.provider.duration')).toBe(calls);

    await waitFor(() => Promise.resolve(named('chargeonce.process_charge').length === calls));
    for (const call of named('chargeonce.process_charge')) {
      const steps = childrenOf(call).sort((a, b) => ms(a.startTime) - ms(b.startTime));
      expect(steps.map((s) => s.name)).toEqual([
        'chargeonce.claim',
        'chargeonce.provider.create',
        'chargeonce.complete',
      ]);
      expect(call.attributes).toMatchObject({ 'chargeonce.recovery_point': 'new' });
      // Each step within its call and after the one before it. Across spans, to the SDK's
      // precision: it places each span's times through Date.now(), in whole milliseconds.
      let at = ms(call.startTime);
      for (const step of steps) {
        expect(ms(step.startTime)).toBeGreaterThanOrEqual(at - 1);
        expect(ms(step.endTime)).toBeGreaterThan(ms(step.startTime));
        at = ms(step.endTime);
      }
      expect(ms(call.endTime)).toBeGreaterThanOrEqual(at - 1);
      expect(ms(call.endTime) - ms(call.startTime)).toBeGreaterThan(
        steps.reduce((total, s) => total + ms(s.endTime) - ms(s.startTime), 0),
      );
    }
    await engine.close();
  });

  it('closing the engine records what waited, before its first pause', async () => {
    const engine = engineWith(tracerProvider.getTracer('test'));
    await Promise.all([1, 2, 3, 4].map(() => engine.processCharge(aKey(), aRequest())));

    const closing = engine.close();
    // Synchronously, as `close` started: a caller shutting its SDK down next loses nothing.
    expect(named('chargeonce.process_charge')).toHaveLength(4);
    await closing;
  });

  it('a tracer whose spans throw on end never fails a charge; it is said once', async () => {
    const real = tracerProvider.getTracer('test');
    const throwing = {
      startSpan: (...args: Parameters<Tracer['startSpan']>): Span => {
        const span = real.startSpan(...args);
        span.end = () => {
          throw new Error('exporter broke');
        };
        return span;
      },
      startActiveSpan: real.startActiveSpan.bind(real),
    };
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const engine = engineWith(throwing);
      const first = await engine.processCharge(aKey(), aRequest());
      const second = await engine.processCharge(aKey(), aRequest());

      // And one that throws as it starts a span, at once (the call's, as the provider is called).
      const broken = engineWith({
        startSpan: () => {
          throw new Error('tracer broke');
        },
        startActiveSpan: real.startActiveSpan.bind(real),
      });
      const third = await broken.processCharge(aKey(), aRequest());

      expect([first.status, second.status, third.status]).toEqual(Array(3).fill('succeeded'));
      const said = warn.mock.calls.filter((c) => String(c[0]).includes('recording telemetry'));
      expect(said).toHaveLength(1);
      // The spans were lost, the points were not: each part of a recording stands on its own.
      expect(await histogramCount('chargeonce.process_charge.duration')).toBe(3);
      expect(await histogramCount('chargeonce.provider.duration')).toBe(3);
      await engine.close();
      await broken.close();
    } finally {
      warn.mockRestore();
    }
  });

  it('a meter whose histograms throw on every point never fails a charge; spans are still recorded', async () => {
    const broke = () => {
      throw new Error('meter broke');
    };
    const meter = {
      createCounter: () => ({ add: broke }),
      createHistogram: () => ({ record: broke }),
      createObservableGauge: () => ({ addCallback() {}, removeCallback() {} }),
      addBatchObservableCallback() {},
      removeBatchObservableCallback() {},
    };
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const engine = engineWith(tracerProvider.getTracer('test'), {
        telemetry: { tracer: tracerProvider.getTracer('test'), meter },
      });
      const key = aKey();
      const outcomes = await Promise.all([
        engine.processCharge(key, aRequest()),
        engine.processCharge(aKey(), aRequest()),
      ]);
      outcomes.push(await engine.processCharge(key, aRequest()));
      await engine.close();

      expect(outcomes.map((o) => [o.status, o.replayed])).toEqual([
        ['succeeded', false],
        ['succeeded', false],
        ['succeeded', true],
      ]);
      expect(named('chargeonce.process_charge')).toHaveLength(3);
    } finally {
      warn.mockRestore();
    }
  });
});
