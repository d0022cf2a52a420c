import { countOption } from '../countOption.js';
import { purgeTombstones, reapCompletedKeys } from '../store/reapCompletedKeys.js';
import { longestRetention, type RetentionWindows } from '../store/retentionWindows.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from '../engine/engineEnv.js';

/** Options of one reaper pass. */
export type ReapOptions = {
  /**
   * The most keys this pass reaps, and separately the most tombstones it deletes.
   * @defaultValue `10_000`
   */
  limit?: number;
  /**
   * Keys per statement: each batch is its own short transaction, so the reaper never holds locks
   * for long and never blocks charges.
   * @defaultValue `1_000`
   */
  batchSize?: number;
};

/**
 * Reaps completed keys older than `retentionMs` into tombstones (their stored response is
 * dropped; a retry is refused with `IdempotencyKeyExpiredError`, never charged again), then
 * deletes tombstones older than `tombstoneRetentionMs`, in batches. Both are the longest any
 * engine on the schema recorded when it started (see `declareRetention`), this one's included.
 * Returns how many keys it reaped. Never touches an unfinished key; charge rows stay. Safe to run from many processes.
 *
 * @throws {InvalidRequestError} a `limit` or `batchSize` that is not a whole number from 1 up;
 * nothing read.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function reap(env: EngineEnv, options: ReapOptions = {}): Promise<number> {
  // Checked before the pass's span starts: a refused call is no pass.
  const limit = countOption('limit', options.limit, 10_000);
  const batchSize = countOption('batchSize', options.batchSize, 1_000);
  const startedAt = performance.now();
  const { reaped, windows } = await env.observer.span('chargeonce.reap', {}, async (span) => {
    const pass = await reapPass(env, limit, Math.min(batchSize, limit));
    span?.setAttribute('chargeonce.reaped', pass.reaped);
    return pass;
  });
  env.observer.event({
    type: 'reaped',
    reaped,
    durationMs: performance.now() - startedAt,
    ...windows,
  });
  return reaped;
}

async function reapPass(
  env: EngineEnv,
  limit: number,
  batchSize: number,
): Promise<{ reaped: number; windows: RetentionWindows }> {
  const pool = await env.pool();
  const inBatches = async (batch: (size: number) => Promise<number>) => {
    let done = 0;
    while (done < limit) {
      const size = Math.min(batchSize, limit - done);
      const n = await withStore(() => batch(size));
      done += n;
      if (n < size) break;
    }
    return done;
  };
  // The longest windows any engine on the schema promised (its own included): other engines'
  // keys are reaped here too, and none before its own engine stopped relying on it.
  const windows = await withStore(() =>
    longestRetention(pool, env.tables, {
      retentionMs: env.retentionMs,
      tombstoneRetentionMs: env.tombstoneRetentionMs,
    }),
  );
  const reaped = await inBatches((size) =>
    reapCompletedKeys(pool, env.tables, { retentionMs: windows.retentionMs, batchSize: size }),
  );
  await inBatches((size) =>
    purgeTombstones(pool, env.tables, {
      tombstoneRetentionMs: windows.tombstoneRetentionMs,
      batchSize: size,
    }),
  );
  return { reaped, windows };
}
