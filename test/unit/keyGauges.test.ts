import { describe, expect, it } from 'vitest';
import { MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import { createKeyGauges, type KeyCounts } from '../../src/observability/createKeyGauges.js';
import { OnDemandMetricReader } from '../../scripts/support/onDemandMetricReader.js';

// The gauges' sampling on its own, with a sample the test finishes when it chooses.

function gaugesOnAReader() {
  const reader = new OnDemandMetricReader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test');
  const gauges = createKeyGauges(meter);
  const points = async (name: string) => {
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
    return (metric?.dataPoints ?? []) as DataPoint<number>[];
  };
  const unfinished = async () => (await points('chargeonce.keys.unfinished')).map((p) => p.value);
  return { meter, gauges, points, unfinished };
}

const counts = (started: number): KeyCounts => ({
  byRecoveryPoint: { started, reserved: 0, failed: 0 },
  oldestUnfinishedMs: null,
});

describe('unfinished-key gauges', () => {
  it('sample once per window: a second collection inside it reads the first sample', async () => {
    const { gauges, unfinished } = gaugesOnAReader();
    let samples = 0;
    gauges.observeKeys(() => Promise.resolve(counts(++samples)), 60_000, 'chargeonce');

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
      'chargeonce',
    );
    const collecting = unfinished();
    // The engine closes while its sample is still out.
    while (finish === null) await new Promise((resolve) => setImmediate(resolve));
    stop();
    (finish as (value: KeyCounts) => void)(counts(7));

    expect(await collecting).toEqual([]);
    expect(await unfinished()).toEqual([]);
  });

  it('of two engines on one meter, on two schemas, show both, each under its schema', async () => {
    const { meter, gauges, points } = gaugesOnAReader();
    // A second engine's instruments on the same meter.
    const others = createKeyGauges(meter);
    gauges.observeKeys(() => Promise.resolve(counts(3)), 60_000, 'payments');
    others.observeKeys(() => Promise.resolve(counts(5)), 60_000, 'refunds_eu');

    const started = (await points('chargeonce.keys.unfinished'))
      .filter((p) => p.attributes['chargeonce.recovery_point'] === 'started')
      .map((p) => [p.attributes['chargeonce.schema'], p.value]);
    expect(Object.fromEntries(started)).toEqual({ payments: 3, refunds_eu: 5 });
    const ages = (await points('chargeonce.keys.oldest_unfinished_age')).map(
      (p) => p.attributes['chargeonce.schema'],
    );
    expect(ages.sort()).toEqual(['payments', 'refunds_eu']);
  });
});
