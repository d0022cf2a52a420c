import type { Histogram, Meter } from '@opentelemetry/api';
import { attributeSets } from './attributeSets.js';
import { createCoalescedCounters, type SeriesKey } from './createCoalescedCounters.js';
import { createKeyGauges, type KeyCounts } from './createKeyGauges.js';
import type { ChargeOnceEvent } from './events.js';

export type { KeyCounts } from './createKeyGauges.js';

/** chargeonce's metrics, on one meter. Names follow OpenTelemetry's conventions (`chargeonce.*`). */
export type Instruments = {
  /** Counts what an event says happened. */
  countEvent(event: ChargeOnceEvent): void;
  /** One `processCharge` that returned an outcome, and its end-to-end duration in seconds. */
  charged(operation: string, outcome: { status: string; replayed: boolean }, seconds: number): void;
  /**
   * One `processCharge` that threw (`errorType`: its code), and its duration in seconds; a 409
   * (`idempotency_key_in_use`) is counted in `chargeonce.conflicts` here.
   */
  chargeFailed(operation: string, errorType: string, seconds: number): void;
  /** One `processCharge` refused before anything was written (400). */
  invalid(operation: string): void;
  /** Duration of one phase's database work (`claim`, `complete`), in seconds. */
  phaseDuration(seconds: number, phase: string): void;
  /** Duration of one provider call (`find`, `create`), in seconds. */
  providerDuration(seconds: number, call: string, outcome: string): void;
  /**
   * Feeds the unfinished-key gauges: `sample` is called at most every `everyMs`, when a reader
   * collects and the last sample is older, never on every scrape. What it returns stops them.
   */
  observeKeys(sample: () => Promise<KeyCounts>, everyMs: number, schema: string): () => void;
};

/** Latency buckets in seconds: a millisecond to a minute (provider calls can be slow). */
const SECONDS_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/**
 * The instruments of one engine. Counters sum locally until a reader collects, and every
 * measurement reuses a cached attribute set: a replay is one statement, and what the SDK does per
 * measurement would otherwise be a good part of its cost.
 */
export function createInstruments(meter: Meter): Instruments {
  const keyGauges = createKeyGauges(meter);
  const counter = createCoalescedCounters(meter, keyGauges.unfinished);
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
    'Calls that ended in a 409: another attempt held the key, or this one lost its lease',
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
  // Every series and attribute set a measurement names, made once (see attributeSets).
  const byOperation = seriesByOne('chargeonce.operation');
  const adoptedBy = seriesBy('chargeonce.operation', 'chargeonce.by');
  const failedAs = seriesBy('chargeonce.operation', 'chargeonce.failure');
  const sweptAs = seriesByOne('chargeonce.sweep.result');
  const claimedFrom = seriesBy('chargeonce.operation', 'chargeonce.from');
  const adminAction = seriesBy('chargeonce.operation', 'chargeonce.action');
  const outcomeSeries = attributeSets(outcomeSeriesOf);
  const failureSets = attributeSets((operation, errorType) =>
    Object.freeze({ 'chargeonce.operation': operation, 'error.type': errorType }),
  );
  const phaseSets = attributeSets((phase) => Object.freeze({ 'chargeonce.phase': phase }));
  const providerSets = attributeSets((call, outcome) =>
    Object.freeze({ 'chargeonce.provider.call': call, 'chargeonce.provider.outcome': outcome }),
  );

  return {
    countEvent(event) {
      switch (event.type) {
        case 'replayed':
          replays.add(1, byOperation(event.operation));
          return;
        case 'conflict':
          // Counted as the call ends (`chargeFailed`): every 409 a caller got, this one included.
          return;
        case 'reused':
          reuses.add(1, byOperation(event.operation));
          return;
        case 'adopted':
          adoptions.add(1, adoptedBy(event.operation, event.by));
          return;
        case 'provider_failed':
          providerFailures.add(
            1,
            failedAs(event.operation, event.transient ? 'transient' : 'error'),
          );
          return;
        case 'parked':
          parked.add(1, byOperation(event.operation));
          return;
        case 'lease_lost':
          leaseLost.add(1, byOperation(event.operation));
          return;
        case 'swept':
          for (const [kind, count] of Object.entries(event.result)) {
            if (kind !== 'examined' && count > 0) swept.add(count, sweptAs(kind));
          }
          return;
        case 'reaped':
          if (event.reaped > 0) reaped.add(event.reaped, NO_ATTRIBUTES);
          return;
        case 'claimed':
          claims.add(1, claimedFrom(event.operation, event.from));
          return;
        case 'cancelled':
          cancelled.add(1, byOperation(event.operation));
          return;
        case 'waiting':
          // A wait is not an outcome: it ends in a replay or a 409, each counted then.
          return;
        case 'requeued':
        case 'resolved':
          adminActions.add(1, adminAction(event.operation, event.type));
          return;
      }
    },
    charged(operation, { status, replayed }, seconds) {
      const series = outcomeSeries(operation, status);
      const outcome = replayed ? series.replayed : series.fresh;
      outcomes.add(1, outcome);
      // By `replayed` as well: a replay is one statement, a fresh charge a provider call and two.
      processSeconds.record(seconds, outcome.attributes);
    },
    chargeFailed(operation, errorType, seconds) {
      // Another attempt held the key, or this one lost its lease: a 409 either way.
      if (errorType === 'idempotency_key_in_use') conflicts.add(1, byOperation(operation));
      processSeconds.record(seconds, failureSets(operation, errorType));
    },
    invalid(operation) {
      invalid.add(1, byOperation(operation));
    },
    phaseDuration(seconds, phase) {
      phaseSeconds.record(seconds, phaseSets(phase, ''));
    },
    providerDuration(seconds, call, outcome) {
      providerSeconds.record(seconds, providerSets(call, outcome));
    },
    observeKeys(sample, everyMs, schema) {
      return keyGauges.observeKeys(sample, everyMs, schema);
    },
  };
}

/** The series of a counter without attributes. */
const NO_ATTRIBUTES: SeriesKey = { id: '', attributes: Object.freeze({}) };

/** Series of a counter keyed by one attribute, each made once (see attributeSets). */
function seriesByOne(name: string): (value: string) => SeriesKey {
  const sets = attributeSets((value) => ({
    id: value,
    attributes: Object.freeze({ [name]: value }),
  }));
  return (value) => sets(value, '');
}

/** Series of a counter keyed by two attributes, each made once (see attributeSets). */
function seriesBy(first: string, second: string): (a: string, b: string) => SeriesKey {
  return attributeSets((a, b) => ({
    id: `${a}\u0000${b}`,
    attributes: Object.freeze({ [first]: a, [second]: b }),
  }));
}

/** An outcome's series, a fresh one and a replayed one (its duration's attribute sets too). */
type OutcomeSeries = { fresh: SeriesKey; replayed: SeriesKey };

function outcomeSeriesOf(operation: string, status: string): OutcomeSeries {
  const outcome = (replayed: boolean): SeriesKey => ({
    id: `${operation}\u0000${status}\u0000${replayed}`,
    attributes: Object.freeze({
      'chargeonce.operation': operation,
      'chargeonce.outcome.status': status,
      'chargeonce.replayed': replayed,
    }),
  });
  return { fresh: outcome(false), replayed: outcome(true) };
}
