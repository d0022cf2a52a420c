import type { DatabasePool } from 'slonik';
import { createChargeEngine } from '../engine/createChargeEngine.js';
import {
  ChargeOnceError,
  IdempotencyKeyInUseError,
  ProviderUnavailableError,
  SimulatedCrashError,
  StoreUnavailableError,
} from '../errors.js';
import type { PaymentProvider, ProviderCharge } from '../provider/PaymentProvider.js';
import type { CrashPoint } from '../engine/types.js';
import type { ChaosOperation } from './chaosOperation.js';
import { createCrashInjector } from './createCrashInjector.js';
import type { OperationSink } from './OperationSink.js';
import { pause } from '../pause.js';

/** What a chaos client needs to run operations. */
export type ClientSettings = {
  pool: DatabasePool;
  provider: PaymentProvider;
  schema: string;
  leaseMs: number;
  providerTimeoutMs: number;
  crashRate: number;
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
  const scoped = { op: op.index, merchantId: op.request.merchantId, key: op.key };
  let lastError: string | null = null;
  for (let attempt = 0; attempt < settings.maxClientAttempts; attempt++) {
    if (settings.signal?.aborted) return;
    const drawn = createCrashInjector(settings.random, settings.crashRate);
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
    try {
      const outcome = await engine.processCharge(op.key, op.request);
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
  | { kind: 'unexpected'; code: string; message: string };

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
