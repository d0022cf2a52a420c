import { countOption } from '../countOption.js';
import {
  ChargeNeedsAttentionError,
  ChargeOnceError,
  IdempotencyKeyInUseError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
} from '../errors.js';
import { deriveProviderKey, validateChargeRequest } from '../request.js';
import { deleteStartedKey } from '../store/deleteStartedKey.js';
import { failKey } from '../store/failKey.js';
import { pickAbandonedKeys, type AbandonedKey } from '../store/pickAbandonedKeys.js';
import { withStore } from '../store/storeErrors.js';
import { chargePhase } from '../engine/chargePhase.js';
import type { EngineEnv } from '../engine/engineEnv.js';
import { errorText } from '../engine/releaseQuietly.js';
import { movementDefinition, MOVEMENT_DEFINITIONS } from '../engine/movementDefinitions.js';
import { finishMovement } from './finishMovement.js';

/** The charge's operation, and the movements its provider can make (refunds, captures). */
function sweptOperations(env: EngineEnv): string[] {
  const operations = [env.operation];
  for (const def of MOVEMENT_DEFINITIONS) {
    try {
      def.requireProvider(env.provider);
      operations.push(def.kind);
    } catch {
      // This provider cannot make them, so none were reserved through this engine.
    }
  }
  return operations;
}

/** Options of one sweep pass. */
export type SweepOptions = {
  /**
   * How many abandoned keys this pass takes at most.
   * @defaultValue `100`
   */
  limit?: number;
  /**
   * How many keys of the batch are finished at once (each may wait on the provider).
   * @defaultValue `8`
   */
  concurrency?: number;
};

/** What one sweep pass did. */
export type SweepResult = {
  /** Keys this pass took. */
  examined: number;
  /** The provider had the charge: adopted, completed, outcome stored. */
  adopted: number;
  /** The provider had nothing: cancelled with a stored 410 outcome (`onAbandoned: 'cancel'`). */
  cancelled: number;
  /** The provider had nothing: charged now and completed (`onAbandoned: 'complete'`). */
  resumed: number;
  /** Keys at `started` (nothing reserved, nothing charged): deleted, so the key is free again. */
  released: number;
  /**
   * Parked in `failed` for a person: the provider still could not answer past `maxAttempts`, or
   * answered with a charge that does not match the request, or the stored request is unreadable.
   */
  failed: number;
  /** Keys this pass could not finish (provider unavailable, lease lost); a later pass retries. */
  skipped: number;
  /**
   * Keys whose finishing threw something unexpected (PostgreSQL went away mid-pass, say). The
   * other keys of the pass were still finished; these keep the sweeper's lease until it runs
   * out, then a later pass takes them again.
   */
  errored: number;
};

/** A result with every count at zero. */
export function emptySweepResult(): SweepResult {
  return {
    examined: 0,
    adopted: 0,
    cancelled: 0,
    resumed: 0,
    released: 0,
    failed: 0,
    skipped: 0,
    errored: 0,
  };
}

/** Adds `pass` into `total`, count by count. */
export function addSweepResult(total: SweepResult, pass: SweepResult): SweepResult {
  for (const k of Object.keys(emptySweepResult()) as Array<keyof SweepResult>) total[k] += pass[k];
  return total;
}

/** The recovery settings a sweep needs from the engine. */
export type SweepSettings = {
  graceMs: number;
  maxAttempts: number;
  onAbandoned: 'cancel' | 'complete';
};

/** How the reason of a key parked because the provider could not answer begins. */
export const PROVIDER_SILENT_REASON_PREFIX = 'the provider could not answer';

export type KeyResult = Exclude<keyof SweepResult, 'examined' | 'errored'>;

/**
 * One recovery pass: takes abandoned keys (lease run out, no activity for `graceMs`) and finishes
 * each at its recovery point. At `reserved` it always asks the provider first and adopts what it
 * finds, whatever the attempt count; it parks a key only when the provider still cannot answer
 * after `maxAttempts`. A key at `started` has nothing charged: it is released, never parked.
 * Safe to run from any number of processes at once.
 *
 * @throws {InvalidRequestError} a `limit` or `concurrency` that is not a whole number from 1 up;
 * nothing read.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach when picking keys. Once keys are
 * picked, every one is tried; one that throws is counted in `errored`, not the whole pass.
 */
export async function sweep(
  env: EngineEnv,
  settings: SweepSettings,
  options: SweepOptions = {},
): Promise<SweepResult> {
  // Checked before the pass's span starts: a refused call is no pass.
  const counts = {
    limit: countOption('limit', options.limit, 100),
    concurrency: countOption('concurrency', options.concurrency, 8),
  };
  const startedAt = performance.now();
  const result = await env.observer.span(
    'chargeonce.sweep',
    { 'chargeonce.operation': env.operation },
    async (span) => {
      const swept = await sweepPass(env, settings, counts);
      // Every count of the result (`chargeonce.sweep.failed`: the keys it parked, …).
      if (span) {
        for (const [kind, count] of Object.entries(swept)) {
          span.setAttribute(`chargeonce.sweep.${kind}`, count);
        }
      }
      return swept;
    },
  );
  env.observer.event({ type: 'swept', result, durationMs: performance.now() - startedAt });
  return result;
}

async function sweepPass(
  env: EngineEnv,
  settings: SweepSettings,
  { limit, concurrency }: Required<SweepOptions>,
): Promise<SweepResult> {
  // Read before the pick is sent: each picked key's lease is measured from here.
  const pickSentAt = env.clock.now();
  const pool = await env.pool();
  const keys = await withStore(() =>
    pickAbandonedKeys(pool, env.tables, {
      operations: sweptOperations(env),
      chargeOperation: env.operation,
      limit,
      graceMs: settings.graceMs,
      leaseMs: env.leaseMs,
    }),
  );
  const result: SweepResult = { ...emptySweepResult(), examined: keys.length };
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++] as AbandonedKey;
      try {
        result[await finishKey(env, settings, key, pickSentAt)] += 1;
      } catch {
        result.errored += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker));
  return result;
}

async function finishKey(
  env: EngineEnv,
  settings: SweepSettings,
  key: AbandonedKey,
  pickSentAt: number,
): Promise<KeyResult> {
  const scoped = { merchantId: key.merchantId, operation: key.operation, key: key.key };
  const pool = await env.pool();
  const park = async (reason: string): Promise<KeyResult> => {
    const parked = await withStore(() =>
      failKey(pool, env.tables, { ...scoped, lockToken: key.lockToken, reason }),
    );
    if (parked) env.observer.event({ type: 'parked', ...scoped, reason });
    return parked ? 'failed' : 'skipped';
  };
  const movement = movementDefinition(key.operation);
  if (movement) return finishMovement(env, settings, movement, key, pickSentAt, park);
  if (key.recoveryPoint === 'started') {
    // Nothing reserved, nothing charged: free the key, however many attempts it had.
    const deleted = await withStore(() =>
      deleteStartedKey(pool, env.tables, { ...scoped, lockToken: key.lockToken }),
    );
    return deleted ? 'released' : 'skipped';
  }
  let request;
  try {
    request = validateChargeRequest(key.key, JSON.parse(key.request)).request;
  } catch (error) {
    // Not a request this version of chargeonce can charge: a person must look, not a loop.
    return park(`stored request cannot be read: ${errorText(error)}`);
  }
  try {
    const { source } = await chargePhase(
      env,
      {
        scoped,
        lockToken: key.lockToken,
        lease: { setAt: pickSentAt },
        reservation: key.reservation,
        chargeId: key.chargeId,
        providerKey:
          key.providerKey ??
          deriveProviderKey(key.merchantId, key.operation, key.key, key.chargeId),
        request,
        providerMayHaveCharged: true,
      },
      settings.onAbandoned === 'complete' ? 'create' : 'cancel',
      'sweeper',
    );
    switch (source) {
      case 'adopted':
        return 'adopted';
      case 'cancelled':
        return 'cancelled';
      case 'created':
        return 'resumed';
    }
  } catch (error) {
    return resultOfFailure(error, settings, key, park);
  }
}

/**
 * What a sweep did with a key whose phase threw: parked already, skipped for a later pass, or
 * parked now because the provider (or a hook) failed at `maxAttempts` of the sweeper's passes.
 * Only the sweeper's own passes count: a client's retries during a provider outage come as fast
 * as its backoff allows and say nothing about whether the provider will answer later; passes
 * spaced by the sweep's grace do.
 * @throws the error itself when it is the store's (the pass counts it as `errored`).
 */
export async function resultOfFailure(
  error: unknown,
  settings: SweepSettings,
  { sweeps, attempts }: { sweeps: number; attempts: number },
  park: (reason: string) => Promise<KeyResult>,
): Promise<KeyResult> {
  const tried = `after ${sweeps} sweeps (${attempts} attempts in all)`;
  // The phase parked the key with the reason.
  if (error instanceof ProviderAnswerInvalidError || error instanceof ChargeNeedsAttentionError) {
    return 'failed';
  }
  if (error instanceof ProviderUnavailableError || error instanceof ProviderError) {
    // The provider could not say whether it charged; the phase released the lease and noted
    // why. Only now does the attempt count matter: past it, a person takes over.
    if (sweeps < settings.maxAttempts) return 'skipped';
    return park(
      `${PROVIDER_SILENT_REASON_PREFIX} ${tried}; last error: ${errorText(error.cause ?? error)}`,
    );
  }
  if (error instanceof IdempotencyKeyInUseError) return 'skipped';
  if (error instanceof ChargeOnceError) throw error;
  // A hook threw: the phase rolled back and released the lease; a later pass retries, until
  // the hook has failed past maxAttempts (then it is a person's to fix, not a loop's).
  if (sweeps < settings.maxAttempts) return 'skipped';
  return park(`a hook kept failing ${tried}: ${errorText(error)}`);
}
