import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { ChargeOnceEvent } from './events.js';

/** What the unfinished-key gauges read: `engine.status()`, sampled. */
export type KeyCounts = {
  byRecoveryPoint: Record<string, number>;
  oldestUnfinishedMs: number | null;
};

/** chargeonce's metrics, on one meter. Names follow OpenTelemetry's conventions (`chargeonce.*`). */
export type Instruments = {
  /** Counts what an event says happened. */
  countEvent(event: ChargeOnceEvent): void;
  /** One `processCharge` that returned an outcome. */
  outcome(attributes: { status: string; replayed: boolean; operation: string }): void;
  /** One `processCharge` refused before anything was written (400). */
  invalid(operation: string): void;
  /** End-to-end duration of a `processCharge`, in seconds, with its result. */
  processDuration(seconds: number, attributes: Attributes): void;
  /** Duration of one phase's database work (`claim`, `complete`), in seconds. */
  phaseDuration(seconds: number, phase: string): void;
  /** Duration of one provider call (`find`, `create`), in seconds. */
  providerDuration(seconds: number, call: string, outcome: string): void;
  /**
   * Feeds the unfinished-key gauges: `sample` is called at most every `everyMs`, when a reader
   * collects and the last sample is older, never on every scrape.
   */
  observeKeys(sample: () => Promise<KeyCounts>, everyMs: number): void;
};

/** Latency buckets in seconds: a millisecond to a minute (provider calls can be slow). */
const SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

export function createInstruments(meter: Meter): Instruments {
  const counter = (name: string, description: string): Counter =>
    meter.createCounter(name, { description });
  const histogram = (name: string, description: string): Histogram =>
    meter.createHistogram(name, {
      description,
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    });

  const outcomes = counter('chargeonce.charges', 'processCharge outcomes, by status');
  const replays = counter(
    'chargeonce.replays',
    'Completed keys answered with their stored outcome',
  );
  const conflicts = counter(
    'chargeonce.conflicts',
    'Calls refused because another attempt held the key (409)',
  );
  const reuses = counter('chargeonce.reuses', 'Keys used for a different request (422)');
  const invalid = counter('chargeonce.invalid_requests', 'Requests refused as invalid (400)');
  const adoptions = counter(
    'chargeonce.adoptions',
    'Provider charges found under a key and recorded, by who found them',
  );
  const providerFailures = counter(
    'chargeonce.provider.failures',
    'Provider calls that failed, by class',
  );
  const swept = counter('chargeonce.sweep.keys', 'Keys a sweep pass handled, by what it did');
  const reaped = counter('chargeonce.reaped', 'Completed keys reaped to tombstones');
  const parked = counter('chargeonce.parked', 'Keys parked for a person');
  const claims = counter(
    'chargeonce.claims',
    'Keys an attempt took: new ones, and takeovers by the point they resumed from',
  );
  const cancelled = counter('chargeonce.cancelled', 'Abandoned charges the sweeper cancelled');
  const adminActions = counter('chargeonce.admin_actions', 'Parked keys requeued or resolved');
  const leaseLost = counter('chargeonce.lease_lost', 'Attempts that found their lease taken over');
  const processSeconds = histogram(
    'chargeonce.process_charge.duration',
    'End-to-end processCharge',
  );
  const phaseSeconds = histogram('chargeonce.phase.duration', 'Database work of one phase');
  const providerSeconds = histogram('chargeonce.provider.duration', 'One provider call');

  let latest: KeyCounts | null = null;
  let sampledAt = Number.NEGATIVE_INFINITY;
  let sampling: Promise<void> | null = null;
  let sampler: { sample: () => Promise<KeyCounts>; everyMs: number } | null = null;
  /** The last sample, refreshed first when it is older than `everyMs` (one query at a time). */
  const current = async (): Promise<KeyCounts | null> => {
    if (sampler && !sampling && performance.now() - sampledAt >= sampler.everyMs) {
      sampledAt = performance.now();
      sampling = sampler
        .sample()
        .then((counts) => {
          latest = counts;
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
  meter
    .createObservableGauge('chargeonce.keys.unfinished', {
      description: 'Keys not yet completed, by recovery point (sampled)',
    })
    .addCallback(async (result) => {
      const counts = await current();
      if (!counts) return;
      for (const [point, count] of Object.entries(counts.byRecoveryPoint)) {
        if (point === 'completed' || point === 'expired') continue;
        result.observe(count, { 'chargeonce.recovery_point': point });
      }
    });
  meter
    .createObservableGauge('chargeonce.keys.oldest_unfinished_age', {
      description: 'Age of the oldest unfinished key (sampled); 0 when there is none',
      unit: 's',
    })
    .addCallback(async (result) => {
      const counts = await current();
      if (counts) result.observe((counts.oldestUnfinishedMs ?? 0) / 1000);
    });

  return {
    countEvent(event) {
      switch (event.type) {
        case 'replayed':
          replays.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'conflict':
          conflicts.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'reused':
          reuses.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'adopted':
          adoptions.add(1, { 'chargeonce.operation': event.operation, 'chargeonce.by': event.by });
          return;
        case 'provider_failed':
          providerFailures.add(1, {
            'chargeonce.operation': event.operation,
            'chargeonce.failure': event.transient ? 'transient' : 'error',
          });
          return;
        case 'parked':
          parked.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'lease_lost':
          leaseLost.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'swept':
          for (const [kind, count] of Object.entries(event.result)) {
            if (kind !== 'examined' && count > 0)
              swept.add(count, { 'chargeonce.sweep.result': kind });
          }
          return;
        case 'reaped':
          if (event.reaped > 0) reaped.add(event.reaped);
          return;
        case 'claimed':
          claims.add(1, { 'chargeonce.operation': event.operation, 'chargeonce.from': event.from });
          return;
        case 'cancelled':
          cancelled.add(1, { 'chargeonce.operation': event.operation });
          return;
        case 'requeued':
        case 'resolved':
          adminActions.add(1, {
            'chargeonce.operation': event.operation,
            'chargeonce.action': event.type,
          });
          return;
      }
    },
    outcome({ status, replayed, operation }) {
      outcomes.add(1, {
        'chargeonce.operation': operation,
        'chargeonce.outcome.status': status,
        'chargeonce.replayed': replayed,
      });
    },
    invalid(operation) {
      invalid.add(1, { 'chargeonce.operation': operation });
    },
    processDuration(seconds, attributes) {
      processSeconds.record(seconds, attributes);
    },
    phaseDuration(seconds, phase) {
      phaseSeconds.record(seconds, { 'chargeonce.phase': phase });
    },
    providerDuration(seconds, call, outcome) {
      providerSeconds.record(seconds, {
        'chargeonce.provider.call': call,
        'chargeonce.provider.outcome': outcome,
      });
    },
    observeKeys(sample, everyMs) {
      sampler = { sample, everyMs };
    },
  };
}
