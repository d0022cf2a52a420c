import { IdempotencyKeyInUseError, SimulatedCrashError } from '../errors.js';
import type { ScopedKey } from '../store/keyState.js';
import { releaseKey } from '../store/releaseKey.js';
import type { EngineEnv } from './engineEnv.js';

/** An error as the one line a person reads in `listStuck()`. */
export function errorText(error: unknown): string {
  return (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, 500);
}

/**
 * Releases the lease after a failure, noting why, so the next attempt takes over at once instead
 * of waiting for the lease to run out. If the store is down too, the first error is still the one
 * to report: the lease simply runs out and the next attempt takes over then.
 */
export async function releaseQuietly(
  env: EngineEnv,
  charge: { scoped: ScopedKey; lockToken: string },
  lastError: string,
): Promise<void> {
  try {
    const pool = await env.pool();
    await releaseKey(pool, env.tables, {
      merchantId: charge.scoped.merchantId,
      operation: charge.scoped.operation,
      key: charge.scoped.key,
      lockToken: charge.lockToken,
      lastError,
    });
  } catch {
    // Deliberately ignored: see above.
  }
}

/**
 * Releases the lease after the attempt failed with `error`, so the next attempt need not wait
 * for it to run out, except when the lease is not ours to give (it was lost to another attempt)
 * or the failure stands for process death (an injected crash releases nothing).
 */
export async function releaseAfterFailure(
  env: EngineEnv,
  charge: { scoped: ScopedKey; lockToken: string },
  error: unknown,
): Promise<void> {
  if (error instanceof IdempotencyKeyInUseError || error instanceof SimulatedCrashError) return;
  await releaseQuietly(env, charge, errorText(error));
}
