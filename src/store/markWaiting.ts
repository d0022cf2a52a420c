import { perSchema, prepared } from './hotStatements.js';
import { queryPrepared } from './hotQuery.js';
import type { PgPoolLike } from './pgPoolLike.js';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import { isKeyLockWait, lockWaitCte } from './keyLockWait.js';

/** The mark, for one schema: a prepared statement, as the hot statements are. */
const markStatement = perSchema(({ keys }) =>
  prepared(`
    WITH ${lockWaitCte('$4::int8')} marked AS (
      UPDATE ${keys} SET has_waiters = true
      FROM lock_wait
      WHERE merchant_id = $1 AND operation = $2 AND key = $3
        AND recovery_point IN ('started', 'reserved')
      RETURNING true AS marked
    )
    SELECT marked FROM marked`),
);

/**
 * Marks a key in progress as waited on, so its completion sends a NOTIFY. Returns false when the
 * key is no longer in progress (completed, parked, gone): no NOTIFY will come, look again now. The
 * row lock orders this against the completion: a mark committed first is seen by it, a mark that
 * waited for it finds the key done. It waits on that lock for `waitMs` at most (the caller's wait
 * left): a completion whose `complete` hook or commit stalls holds the row for as long, and a
 * caller must not wait past its own deadline for it. A mark cut short returns false too.
 *
 * Sent on the node-postgres pool itself (waiting on commit needs one), as the hot statements are,
 * not through slonik: slonik keeps a connection it borrowed for a while after its query, and in a
 * storm on several keys the marks would hold the pool's connections idle while the callers they
 * woke queued for one.
 */
export async function markWaiting(
  pool: PgPoolLike,
  tables: Tables,
  scoped: ScopedKey,
  waitMs: number,
): Promise<boolean> {
  try {
    const rows = await queryPrepared(pool, markStatement(tables), [
      scoped.merchantId,
      scoped.operation,
      scoped.key,
      // Whole milliseconds, at least one (a lock_timeout of 0 would mean no limit), at most what
      // PostgreSQL takes (a wait of weeks is refused as a setting, not waited).
      Math.min(MAX_LOCK_TIMEOUT_MS, Math.max(1, Math.ceil(waitMs))),
    ]);
    return rows.length > 0;
  } catch (error) {
    if (isKeyLockWait(error, true)) return false;
    throw error;
  }
}

/** The longest `lock_timeout` PostgreSQL accepts, in milliseconds (INT_MAX). */
const MAX_LOCK_TIMEOUT_MS = 2_147_483_647;
