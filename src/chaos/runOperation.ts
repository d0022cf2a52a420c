import type { PgPoolLike } from '../store/pgPoolLike.js';
import { createChargeEngine } from '../engine/createChargeEngine.js';
import {
  ChargeNeedsAttentionError,
  ChargeOnceError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SimulatedCrashError,
  StoreUnavailableError,
} from '../errors.js';
import {
  declaredTraits,
  type PaymentProvider,
  type ProviderCharge,
} from '../provider/PaymentProvider.js';
import type { CrashPoint } from '../engine/types.js';
import type { ChaosOperation } from './chaosOperation.js';
import { createCrashInjector } from './createCrashInjector.js';
import type { OperationSink, TerminalStatus } from './OperationSink.js';
import { stepWallClock } from './wallClock.js';
import { pause } from '../pause.js';

/** What a chaos client needs to run operations. */
export type ClientSettings = {
  pool: PgPoolLike;
  provider: PaymentProvider;
  schema: string;
  leaseMs: number;
  providerTimeoutMs: number;
  crashRate: number;
  /** The chance an attempt stalls past its lease (see `ChaosOptions.stallRate`). */
  stallRate: number;
  /** The chance an attempt first steps this process's wall clock. */
  clockStepRate: number;
  abandonRate: number;
  maxClientAttempts: number;
  random: () => number;
  /** Aborted when the client must stop at once (its process is shutting down). */
  signal?: AbortSignal;
};

/**
 * A client of one operation: calls `processCharge` with the operation's key and request until it
 * gets an outcome, retrying what may go differently next time, with the same key, as a real
 * client would; everything it sees goes to `sink`. Each attempt gets an engine of its own with
 * its own crash, like a new process serving the retry.
 */
export async function runOperation(
  settings: ClientSettings,
  op: ChaosOperation,
  sink: OperationSink,
): Promise<void> {
  let lastError: string | null = null;
  for (let attempt = 0; attempt < settings.maxClientAttempts; attempt++) {
    if (settings.signal?.aborted) return;
    const drawn = createCrashInjector(settings.random, settings);
    const clockStepped = settings.random() < settings.clockStepRate;
    if (clockStepped) {
      stepWallClock(CLOCK_STEPS[Math.floor(settings.random() * CLOCK_STEPS.length)] ?? 0);
    }
    const scoped = {
      op: op.index,
      merchantId: op.request.merchantId,
      key: op.key,
      stalled: drawn.stall !== null,
      clockStepped,
    };
    const probe = probeLookups(settings.provider);
    const engine = createChargeEngine({
      pool: settings.pool,
      provider: probe.provider,
      schema: settings.schema,
      leaseMs: settings.leaseMs,
      providerTimeoutMs: settings.providerTimeoutMs,
      separateClaim: drawn.separateClaim,
      ...(drawn.faults ? { faults: drawn.faults } : {}),
    });
    // The engine lives for this attempt only: what it borrowed from the pool goes back after.
    const answer = engine.processCharge(op.key, op.request);
    void answer.catch(() => undefined).finally(() => void engine.close().catch(() => undefined));
    try {
      const outcome = await answer;
      const found = probe.found();
      sink.attempt({
        ...scoped,
        kind: 'outcome',
        status: outcome.status,
        replayed: outcome.replayed,
        adopted: !outcome.replayed && found !== null && found.id === outcome.providerChargeId,
        body: outcome.body,
      });
      sink.ended({ op: op.index, result: 'settled', status: outcome.status, lastError });
      return;
    } catch (error) {
      const retry = classify(error);
      if (retry.kind === 'terminal') {
        sink.attempt({ ...scoped, ...retry });
        sink.ended({
          op: op.index,
          result: 'settled',
          status: retry.status,
          lastError: retry.code,
        });
        return;
      }
      if (retry.kind === 'unexpected') {
        sink.attempt({ ...scoped, ...retry });
        sink.ended({ op: op.index, result: 'failed', status: null, lastError: retry.code });
        return;
      }
      sink.attempt({ ...scoped, ...retry.event });
      lastError = retry.event.kind === 'crash' ? 'simulated_crash' : retry.event.code;
      if (settings.random() < settings.abandonRate) {
        sink.ended({ op: op.index, result: 'abandoned', status: null, lastError });
        return;
      }
      await pause(retryDelay(retry.retryAfterMs, attempt, settings.random), settings.signal);
    }
  }
  if (settings.signal?.aborted) return;
  sink.ended({ op: op.index, result: 'gaveUp', status: null, lastError });
}

type Classified =
  | {
      kind: 'retry';
      event: { kind: 'crash'; point: CrashPoint } | { kind: 'retryable'; code: string };
      retryAfterMs: number | null;
    }
  | { kind: 'terminal'; status: TerminalStatus; code: string }
  | { kind: 'unexpected'; code: string; message: string };

/** Wall-clock steps a client may make: an hour or a minute, either way. */
const CLOCK_STEPS = [-3_600_000, -60_000, 60_000, 3_600_000] as const;

/** The retryable outcomes of the issue: in use (409), provider or store unavailable (503), a crash. */
function classify(error: unknown): Classified {
  if (error instanceof SimulatedCrashError) {
    return {
      kind: 'retry',
      event: { kind: 'crash', point: error.point as CrashPoint },
      retryAfterMs: null,
    };
  }
  if (
    error instanceof IdempotencyKeyInUseError ||
    error instanceof ProviderUnavailableError ||
    error instanceof StoreUnavailableError
  ) {
    return {
      kind: 'retry',
      event: { kind: 'retryable', code: error.code },
      retryAfterMs: error.retryAfterMs,
    };
  }
  // The adapter refused an answer it could not parse: the key stays at `reserved`, and a retry
  // asks the provider again.
  if (error instanceof ProviderError) {
    return { kind: 'retry', event: { kind: 'retryable', code: error.code }, retryAfterMs: null };
  }
  // The engine refused the provider's answer and parked the key: settled, for a person.
  if (error instanceof ProviderAnswerInvalidError || error instanceof ChargeNeedsAttentionError) {
    return { kind: 'terminal', status: 'parked', code: error.code };
  }
  if (error instanceof IdempotencyKeyExpiredError) {
    return { kind: 'terminal', status: 'expired', code: error.code };
  }
  if (error instanceof ChargeOnceError) {
    return { kind: 'unexpected', code: error.code, message: error.message };
  }
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'unexpected', code: name, message };
}

/**
 * The server's `Retry-After` when it gave one (plus a little jitter, so clients told the same
 * moment do not all come back at once), else exponential backoff with full jitter.
 */
function retryDelay(retryAfterMs: number | null, attempt: number, random: () => number): number {
  if (retryAfterMs !== null) return retryAfterMs + Math.floor(random() * 50);
  return Math.floor(random() * Math.min(500, 25 * 2 ** attempt));
}

/** Wraps a provider to see whether an attempt's lookup found a charge (an adoption). */
function probeLookups(provider: PaymentProvider) {
  let found: ProviderCharge | null = null;
  return {
    provider: {
      ...declaredTraits(provider),
      createCharge: (input, opts) => provider.createCharge(input, opts),
      findCharge: async (providerKey, opts) => {
        const charge = await provider.findCharge(providerKey, opts);
        if (charge) found = charge;
        return charge;
      },
    } satisfies PaymentProvider,
    found: () => found,
  };
}
