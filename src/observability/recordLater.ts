import { batchesGathering } from '../store/createBatcher.js';

/**
 * Telemetry that need not be recorded the moment it happens: a call's spans that carry their own
 * start and end times, and its histogram points. A call alone records it at once. While other
 * calls are in flight, recording it at once would keep them waiting: under group commit the
 * callers a batch answers run one after the other, and the next batch goes out only once they
 * all have, so every microsecond spent recording is spent while the database waits. It is
 * recorded within a few turns of the event loop instead, once the batch gathered in this turn
 * has gone out and no provider call of ours is about to answer: while the database works on
 * that batch.
 */
type Record = () => void;

/** The most turns a drain waits for batches and provider calls: it never waits for good. */
const MOST_TURNS_WAITED = 3;

/** The real `setImmediate`, as the batcher's: fake timers in a test must not hold records back. */
const nextTurn = setImmediate;

let queue: Record[] = [];
let scheduled = false;
let turnsWaited = 0;
let callsInFlight = 0;
let providerCallsInFlight = 0;
let warned = false;

/** A call of the engine's started (counted until `callEnded`). */
export function callStarted(): void {
  callsInFlight += 1;
}

export function callEnded(): void {
  callsInFlight -= 1;
}

/** A provider call started, and ended: a drain waits for it to answer (up to a few turns). */
export function providerCallStarted(): void {
  providerCallsInFlight += 1;
}

export function providerCallEnded(): void {
  providerCallsInFlight -= 1;
}

/**
 * Records `record` now when the calling call is the only one in flight, else within a few turns
 * later (see above). A record that throws is dropped, with one warning: telemetry never breaks
 * a charge.
 */
export function recordLater(record: Record): void {
  if (callsInFlight <= 1) {
    recordQuietly(record);
    return;
  }
  queue.push(record);
  if (!scheduled) {
    scheduled = true;
    nextTurn(drain);
  }
}

/** Records everything waiting, now: at an engine's close, and in tests that read spans at once. */
export function recordPendingTelemetry(): void {
  const records = queue;
  queue = [];
  for (const record of records) recordQuietly(record);
}

function drain(): void {
  scheduled = false;
  if ((batchesGathering() > 0 || providerCallsInFlight > 0) && turnsWaited < MOST_TURNS_WAITED) {
    turnsWaited += 1;
    scheduled = true;
    nextTurn(drain);
    return;
  }
  turnsWaited = 0;
  recordPendingTelemetry();
}

/** Runs `record`; what it throws is said once (`telemetryFailed`) and dropped. */
export function recordQuietly(record: Record): void {
  try {
    record();
  } catch (error) {
    telemetryFailed(error);
  }
}

/** Says, once per process, that a tracer or meter threw: what it threw is dropped. */
export function telemetryFailed(error: unknown): void {
  if (warned) return;
  warned = true;
  console.warn('chargeonce: recording telemetry failed; the call was not affected:', error);
}
