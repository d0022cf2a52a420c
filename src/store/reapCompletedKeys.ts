import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Tables } from './tables.js';

/**
 * Deletes up to `batchSize` completed keys whose completion is older than `retentionMs`, in one
 * short statement. Unfinished keys are never touched; charge rows stay (keys point at charges,
 * not the other way round). SKIP LOCKED: a reaper never waits on a row someone else holds.
 */
export async function reapCompletedKeys(
  db: CommonQueryMethods,
  tables: Tables,
  options: { retentionMs: number; batchSize: number },
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ deleted: z.number().int() }))`
    WITH old AS (
      SELECT merchant_id, operation, key
      FROM ${tables.keys}
      WHERE recovery_point = 'completed'
        AND completed_at < now() - ${options.retentionMs}::float8 * interval '1 millisecond'
      ORDER BY completed_at
      LIMIT ${options.batchSize}
      FOR UPDATE SKIP LOCKED
    ), deleted AS (
      DELETE FROM ${tables.keys} k
      USING old
      WHERE k.merchant_id = old.merchant_id AND k.operation = old.operation AND k.key = old.key
        AND k.recovery_point = 'completed'
      RETURNING 1
    )
    SELECT count(*)::int4 AS deleted FROM deleted`);
}
