import { describe, expect, it } from 'vitest';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import { createKeyGauges, type KeyCounts } from '../../src/observability/createKeyGauges.js';
import { OnDemandMetricReader } from '../../scripts/support/onDemandMetricReader.js';

// The gauges' sampling on its own, with a sample the test finishes when it chooses.

function gaugesOnAReader() {
  const reader = new OnDemandMetricReader();
  const gauges = createKeyGauges(new MeterProvider({ readers: [reader] }).getMeter('test'));
  const unfinished = async () => {
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'chargeonce.keys.unfinished');
    return ((metric?.dataPoints ?? []) as DataPoint<number>[]).map((p) => p.value);
  };
  return { gauges, unfinished };
}

const counts = (started: number): KeyCounts => ({
  byRecoveryPoint: { started, reserved: 0, failed: 0 },
  oldestUnfinishedMs: null,
});

describe('unfinished-key gauges', () => {
  it('sample once per window: a second collection inside it reads the first sample', async () => {
    const { gauges, unfinished } = gaugesOnAReader();
    let samples = 0;
    gauges.observeKeys(() => Promise.resolve(counts(++samples)), 60_000);

    expect(await unfinished()).toEqual([1, 0, 0]);
    expect(await unfinished()).toEqual([1, 0, 0]);
    expect(samples).toBe(1);
  });

  it('show nothing of a sample that ends after they were stopped', async () => {
    const { gauges, unfinished } = gaugesOnAReader();
    let finish: ((value: KeyCounts) => void) | null = null;
    const stop = gauges.observeKeys(
      () =>
        new Promise<KeyCounts>((resolve) => {
          finish = resolve;
        }),
      0,
    );
    const collecting = unfinished();
    // The engine closes while its sample is still out.
    while (finish === null) await new Promise((resolve) => setImmediate(resolve));
    stop();
    (finish as (value: KeyCounts) => void)(counts(7));

    expect(await collecting).toEqual([]);
    expect(await unfinished()).toEqual([]);
  });
});
