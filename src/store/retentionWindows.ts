import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Tables } from './tables.js';

/** How long keys are kept: replayed for `retentionMs`, then refused until `tombstoneRetentionMs`. */
export type RetentionWindows = { retentionMs: number; tombstoneRetentionMs: number };

const windowsRow = z.object({
  retention_ms: z.coerce.number(),
  tombstone_retention_ms: z.coerce.number(),
});

/**
 * Records the windows an engine of `operation` promises its callers, once, when it starts. A
 * window already recorded for the operation is never lowered: an engine made for a one-off
 * job (a `chargeonce reap` with the defaults, say) cannot shorten what the serving engines
 * promised. Shortening one is a deliberate act: `UPDATE` (or delete) the operation's row.
 */
export async function declareRetention(
  db: CommonQueryMethods,
  tables: Tables,
  operation: string,
  windows: RetentionWindows,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO ${tables.retentionWindows} AS w
      (operation, retention_ms, tombstone_retention_ms)
    VALUES (${operation}, ${windows.retentionMs}, ${windows.tombstoneRetentionMs})
    ON CONFLICT (operation) DO UPDATE
    SET retention_ms = GREATEST(w.retention_ms, excluded.retention_ms),
      tombstone_retention_ms = GREATEST(w.tombstone_retention_ms, excluded.tombstone_retention_ms),
      updated_at = now()
    WHERE excluded.retention_ms > w.retention_ms
      OR excluded.tombstone_retention_ms > w.tombstone_retention_ms`);
}

/**
 * The windows a reaper keeps keys for: the longest any engine on the schema recorded, and at
 * least `own`. Every key of the schema is reaped by them, whichever engine's it is, so none is
 * reaped before the engine that answered it stopped promising a replay (or a refusal).
 */
export async function longestRetention(
  db: CommonQueryMethods,
  tables: Tables,
  own: RetentionWindows,
): Promise<RetentionWindows> {
  const row = await db.one(sql.type(windowsRow)`
    SELECT GREATEST(${own.retentionMs}::bigint, max(retention_ms)) AS retention_ms,
      GREATEST(${own.tombstoneRetentionMs}::bigint, max(tombstone_retention_ms))
        AS tombstone_retention_ms
    FROM ${tables.retentionWindows}`);
  return { retentionMs: row.retention_ms, tombstoneRetentionMs: row.tombstone_retention_ms };
}
