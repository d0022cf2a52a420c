import { reapCompletedKeys } from '../store/reapCompletedKeys.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from '../engine/engineEnv.js';

/** Options of one reaper pass. */
export type ReapOptions = {
  /**
   * The most keys this pass deletes.
   * @defaultValue `10_000`
   */
  limit?: number;
  /**
   * Keys deleted per statement: each batch is its own short transaction, so the reaper never
   * holds locks for long and never blocks charges.
   * @defaultValue `1_000`
   */
  batchSize?: number;
};

/**
 * Deletes completed keys older than `retentionMs`, in batches, and returns how many. Never
 * deletes an unfinished key. Charge rows stay. Safe to run from many processes at once.
 *
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function reap(env: EngineEnv, options: ReapOptions = {}): Promise<number> {
  const limit = options.limit ?? 10_000;
  const batchSize = Math.max(1, Math.min(options.batchSize ?? 1_000, limit));
  const pool = await env.pool();
  let deleted = 0;
  while (deleted < limit) {
    const size = Math.min(batchSize, limit - deleted);
    const batch = await withStore(() =>
      reapCompletedKeys(pool, env.tables, { retentionMs: env.retentionMs, batchSize: size }),
    );
    deleted += batch;
    if (batch < size) break;
  }
  return deleted;
}
