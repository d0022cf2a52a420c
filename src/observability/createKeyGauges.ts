import type { Meter, Observable } from '@opentelemetry/api';

/** What the unfinished-key gauges read: `engine.status()`, sampled. */
export type KeyCounts = {
  byRecoveryPoint: Record<string, number>;
  oldestUnfinishedMs: number | null;
};

/** The gauges of unfinished keys, fed by a sampler set later (once the pool is there). */
export type KeyGauges = {
  /** `chargeonce.keys.unfinished`, for callbacks that must run when a reader collects. */
  unfinished: Observable;
  /**
   * Feeds the gauges: `sample` is called at most every `everyMs`, when a reader collects and the
   * last sample is older, never on every scrape. What it returns stops the sampling (the engine
   * closed, its pool with it): the callbacks observe nothing more. (The JavaScript SDK still
   * reports an attribute set it saw once, at its last value, until its meter provider shuts
   * down: opentelemetry-js#4096.) Every point carries `chargeonce.schema`: engines on several
   * schemas that share a meter each report their own keys, not one over the other's.
   */
  observeKeys(sample: () => Promise<KeyCounts>, everyMs: number, schema: string): () => void;
};

/** Observable gauges of unfinished keys by recovery point and the age of the oldest one. */
export function createKeyGauges(meter: Meter): KeyGauges {
  /** The last sample, with the schema it counted (a sample outlives a stopped sampler). */
  let latest: { counts: KeyCounts; schema: string } | null = null;
  let sampledAt = Number.NEGATIVE_INFINITY;
  let sampling: Promise<void> | null = null;
  let sampler: { sample: () => Promise<KeyCounts>; everyMs: number; schema: string } | null = null;
  /** The last sample, refreshed first when it is older than `everyMs` (one query at a time). */
  const current = async (): Promise<typeof latest> => {
    if (sampler && !sampling && performance.now() - sampledAt >= sampler.everyMs) {
      sampledAt = performance.now();
      const own = sampler;
      sampling = own
        .sample()
        .then((counts) => {
          // A sample that ends after the gauges were stopped is not shown.
          if (sampler === own) latest = { counts, schema: own.schema };
        })
        // A failed sample keeps the last values: the store's own errors are reported elsewhere.
        .catch(() => undefined)
        .finally(() => {
          sampling = null;
        });
    }
    if (sampling) await sampling;
    return latest;
  };
  const unfinished = meter.createObservableGauge('chargeonce.keys.unfinished', {
    description: 'Keys not yet completed, by recovery point (sampled)',
  });
  unfinished.addCallback(async (result) => {
    const sample = await current();
    if (!sample) return;
    for (const [point, count] of Object.entries(sample.counts.byRecoveryPoint)) {
      if (point === 'completed' || point === 'expired') continue;
      result.observe(count, {
        'chargeonce.recovery_point': point,
        'chargeonce.schema': sample.schema,
      });
    }
  });
  meter
    .createObservableGauge('chargeonce.keys.oldest_unfinished_age', {
      description:
        'Age of the oldest key at started or reserved (sampled; parked keys are not aged); 0 when there is none',
      unit: 's',
    })
    .addCallback(async (result) => {
      const sample = await current();
      if (sample) {
        result.observe((sample.counts.oldestUnfinishedMs ?? 0) / 1000, {
          'chargeonce.schema': sample.schema,
        });
      }
    });
  return {
    unfinished,
    observeKeys(sample, everyMs, schema) {
      const own = { sample, everyMs, schema };
      sampler = own;
      return () => {
        if (sampler !== own) return;
        sampler = null;
        latest = null;
      };
    },
  };
}
