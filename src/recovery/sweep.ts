import {
  ChargeOnceError,
  IdempotencyKeyInUseError,
  ProviderError,
  ProviderUnavailableError,
} from '../errors.js';
import { validateChargeRequest } from '../request.js';
import { deleteStartedKey } from '../store/deleteStartedKey.js';
import { failKey } from '../store/failKey.js';
import { pickAbandonedKeys, type AbandonedKey } from '../store/pickAbandonedKeys.js';
import { withStore } from '../store/storeErrors.js';
import { chargePhase } from '../engine/chargePhase.js';
import type { EngineEnv } from '../engine/engineEnv.js';
import { errorText } from '../engine/releaseQuietly.js';
import { deriveProviderKey } from '../request.js';

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
  /** Keys past `maxAttempts`: parked in `failed` for a person. */
  failed: number;
  /** Keys this pass could not finish (provider unavailable, lease lost); a later pass retries. */
  skipped: number;
};

/** A result with every count at zero. */
export function emptySweepResult(): SweepResult {
  return { examined: 0, adopted: 0, cancelled: 0, resumed: 0, released: 0, failed: 0, skipped: 0 };
}

/** Adds `pass` into `total`, count by count. */
export function addSweepResult(total: SweepResult, pass: SweepResult): SweepResult {
  for (const k of Object.keys(total) as Array<keyof SweepResult>) total[k] += pass[k];
  return total;
}

/** The recovery settings a sweep needs from the engine. */
export type SweepSettings = {
  graceMs: number;
  maxAttempts: number;
  onAbandoned: 'cancel' | 'complete';
};

type KeyResult = Exclude<keyof SweepResult, 'examined'>;

/**
 * One recovery pass: takes abandoned keys (lease run out, no activity for `graceMs`) and finishes
 * each at its recovery point. Safe to run from any number of processes at once.
 *
 * @throws {StoreUnavailableError} PostgreSQL is out of reach. Keys this pass already finished
 * stay finished; the others keep their lease until it runs out, then a later pass takes them.
 */
export async function sweep(
  env: EngineEnv,
  settings: SweepSettings,
  options: SweepOptions = {},
): Promise<SweepResult> {
  const limit = options.limit ?? 100;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const pool = await env.pool();
  const keys = await withStore(() =>
    pickAbandonedKeys(pool, env.tables, {
      operation: env.operation,
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
      result[await finishKey(env, settings, key)] += 1;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, keys.length) }, worker));
  return result;
}

async function finishKey(
  env: EngineEnv,
  settings: SweepSettings,
  key: AbandonedKey,
): Promise<KeyResult> {
  const scoped = { merchantId: key.merchantId, operation: key.operation, key: key.key };
  const pool = await env.pool();
  const park = async (reason: string): Promise<KeyResult> => {
    const parked = await withStore(() =>
      failKey(pool, env.tables, { ...scoped, lockToken: key.lockToken, reason }),
    );
    return parked ? 'failed' : 'skipped';
  };
  if (key.attempts > settings.maxAttempts) {
    return park(
      `gave up after ${key.attempts - 1} attempts; last error: ${key.lastError ?? 'none recorded'}`,
    );
  }
  if (key.recoveryPoint === 'started') {
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
        chargeId: key.chargeId,
        providerKey:
          key.providerKey ??
          deriveProviderKey(key.merchantId, key.operation, key.key, key.chargeId),
        request,
        providerMayHaveCharged: true,
      },
      settings.onAbandoned === 'complete' ? 'create' : 'cancel',
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
    // The phase released the lease and noted why; the attempt counts toward maxAttempts.
    if (
      error instanceof ProviderUnavailableError ||
      error instanceof ProviderError ||
      error instanceof IdempotencyKeyInUseError
    ) {
      return 'skipped';
    }
    if (error instanceof ChargeOnceError) throw error;
    // A hook threw: the phase rolled back and released the lease; a later pass retries.
    return 'skipped';
  }
}
