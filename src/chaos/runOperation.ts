import { IdempotencyKeyInUseError } from '../errors.js';
import { pause } from '../pause.js';
import { classifyAttemptError } from './classifyAttemptError.js';
import type { ChaosEngines } from './createChaosEngines.js';
import type { PlannedOperation } from './createChaosPlan.js';
import { createCrashInjector } from './createCrashInjector.js';
import { holdClaim } from './holdClaim.js';
import type { OperationEnd, OperationSink } from './OperationSink.js';
import { sendDuplicate } from './sendDuplicate.js';
import type { OperationCall } from './sendOperation.js';
import { stepWallClock } from './wallClock.js';
import { watchAttempt } from './watchAttempt.js';

/** What a chaos client needs to run operations. */
export type ClientSettings = {
  /** The engines of the client's process, shared by every attempt it makes. */
  engines: ChaosEngines;
  leaseMs: number;
  providerTimeoutMs: number;
  crashRate: number;
  /** The chance an attempt stalls past its lease (see `ChaosOptions.stallRate`). */
  stallRate: number;
  /**
   * The chance an attempt's claim is held uncommitted while its request is sent again (see
   * `ChaosOptions.holdRate`).
   */
  holdRate: number;
  /** The chance an attempt first steps this process's wall clock. */
  clockStepRate: number;
  abandonRate: number;
  /** The chance an operation's request is also sent a second time, alongside its first attempt. */
  duplicateRate: number;
  maxClientAttempts: number;
  random: () => number;
  /** Aborted when the client must stop at once (its process is shutting down). */
  signal?: AbortSignal;
};

/** How far apart an operation's first attempt and its second submission start, at most. */
const DUPLICATE_SPREAD_MS = 10;

/**
 * A client of one operation: sends it through `call` (`processCharge`, `processRefund` or
 * `processCapture`, with the operation's key and request) until it gets an outcome, retrying
 * what may go differently next time, with the same key, as a real client would. Everything it
 * sees goes to `sink`; how it ended is also returned (null when `signal` stopped it). Its
 * attempts go through the engines its process shares with every other client (so they batch and
 * wait with the others'), each with its own crash and stall points, which the engine's router
 * gives to it by key. With `duplicateRate`, the request is also sent once more at about the same
 * time, through the process's other engine, as a double tap landing on a second server would.
 */
export async function runOperation(
  settings: ClientSettings,
  op: PlannedOperation,
  call: OperationCall,
  sink: OperationSink,
): Promise<OperationEnd | null> {
  let duplicate: Promise<void> | null = null;
  if (settings.duplicateRate > 0 && settings.random() < settings.duplicateRate) {
    // Either may go first: the one that claims holds the key while the other waits or is refused.
    const lead = Math.floor(settings.random() * DUPLICATE_SPREAD_MS);
    const duplicateFirst = settings.random() < 0.5;
    duplicate = sendDuplicate(settings, op, call, sink, duplicateFirst ? 0 : lead);
    if (duplicateFirst) await pause(lead, settings.signal);
  }
  try {
    const end = await runAttempts(settings, op, call, sink);
    if (end) sink.ended(end);
    return end;
  } finally {
    // In a worker, what the duplicate saw must be sent before the worker reports itself idle.
    await duplicate;
  }
}

async function runAttempts(
  settings: ClientSettings,
  op: PlannedOperation,
  call: OperationCall,
  sink: OperationSink,
): Promise<OperationEnd | null> {
  let lastError: string | null = null;
  for (let attempt = 0; attempt < settings.maxClientAttempts; attempt++) {
    if (settings.signal?.aborted) return null;
    const drawn = createCrashInjector(settings.random, settings);
    const clockStepped = settings.random() < settings.clockStepRate;
    if (clockStepped) {
      stepWallClock(CLOCK_STEPS[Math.floor(settings.random() * CLOCK_STEPS.length)] ?? 0);
    }
    const scoped = {
      op: op.index,
      operation: op.kind,
      merchantId: op.merchantId,
      key: op.key,
      stalled: drawn.stall !== null,
      // Read as the attempt is reported (the event spreads this): whether its suspend fired.
      get suspended() {
        return drawn.suspended();
      },
      clockStepped,
      duplicate: false,
    };
    const shared = settings.engines.forAttempt(drawn.separateClaim, drawn.hold);
    const watch = watchAttempt(shared.waits);
    const held = drawn.hold ? holdClaim(settings, op, call, sink, drawn.holdMs) : null;
    const route = {
      faults: drawn.faults,
      ...watch.route,
      ...(held ? { hold: () => held.hold() } : {}),
    };
    try {
      const answer = await shared.router
        .run(scoped, route, () => call(shared.engine))
        .finally(() => held?.settled());
      const found = watch.found();
      sink.attempt({
        ...scoped,
        wait: watch.wait('outcome'),
        kind: 'outcome',
        status: answer.status,
        replayed: answer.replayed,
        adopted: !answer.replayed && found !== null && found.id === answer.providerId,
        body: answer.body,
        chargeId: answer.chargeId,
        refusal: answer.refusal,
      });
      return {
        op: op.index,
        result: 'settled',
        status: answer.status,
        lastError,
        ...(op.kind === 'charge' ? { chargeId: answer.chargeId } : {}),
      };
    } catch (error) {
      const wait = watch.wait(error instanceof IdempotencyKeyInUseError ? 'inUse' : 'error');
      const retry = classifyAttemptError(error);
      if (retry.kind === 'terminal') {
        sink.attempt({ ...scoped, wait, ...retry });
        return { op: op.index, result: 'settled', status: retry.status, lastError: retry.code };
      }
      if (retry.kind === 'unexpected') {
        sink.attempt({ ...scoped, wait, ...retry });
        return { op: op.index, result: 'failed', status: null, lastError: retry.code };
      }
      sink.attempt({ ...scoped, wait, ...retry.event });
      lastError = retry.event.kind === 'crash' ? 'simulated_crash' : retry.event.code;
      if (settings.random() < settings.abandonRate) {
        return { op: op.index, result: 'abandoned', status: null, lastError };
      }
      await pause(retryDelay(retry.retryAfterMs, attempt, settings.random), settings.signal);
    }
  }
  if (settings.signal?.aborted) return null;
  return { op: op.index, result: 'gaveUp', status: null, lastError };
}

/** Wall-clock steps a client may make: an hour or a minute, either way. */
const CLOCK_STEPS = [-3_600_000, -60_000, 60_000, 3_600_000] as const;

/**
 * The server's `Retry-After` when it gave one (plus a little jitter, so clients told the same
 * moment do not all come back at once), else exponential backoff with full jitter.
 */
function retryDelay(retryAfterMs: number | null, attempt: number, random: () => number): number {
  if (retryAfterMs !== null) return retryAfterMs + Math.floor(random() * 50);
  return Math.floor(random() * Math.min(500, 25 * 2 ** attempt));
}
