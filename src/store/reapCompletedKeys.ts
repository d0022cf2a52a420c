import { z } from 'zod';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import type { Tables } from './tables.js';

const countRow = z.object({ count: z.number().int() });

/**
 * Turns up to `batchSize` completed keys whose completion is older than `retentionMs` into
 * tombstones, in one short statement: the stored request and response are dropped, the scope,
 * key, fingerprint, charge id and completion time stay (`expired`), so a late retry is refused
 * rather than charged again. Unfinished keys are never touched; charge rows stay.
 */
export async function reapCompletedKeys(
  db: CommonQueryMethods,
  tables: Tables,
  options: { retentionMs: number; batchSize: number },
): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    WITH old AS (${oldestAt(tables, 'completed', options.retentionMs, options.batchSize)}),
    reaped AS (
      UPDATE ${tables.keys} k
      SET recovery_point = 'expired', request = '', response_status = NULL,
        response_body = NULL, last_error = NULL, updated_at = now()
      FROM old
      WHERE k.merchant_id = old.merchant_id AND k.operation = old.operation AND k.key = old.key
        AND k.recovery_point = 'completed'
      RETURNING 1
    )
    SELECT count(*)::int4 AS count FROM reaped`);
}

/**
 * Deletes up to `batchSize` tombstones whose key completed more than `tombstoneRetentionMs` ago:
 * past that window the key is forgotten and may be used afresh.
 */
export async function purgeTombstones(
  db: CommonQueryMethods,
  tables: Tables,
  options: { tombstoneRetentionMs: number; batchSize: number },
): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    WITH old AS (
      ${oldestAt(tables, 'expired', options.tombstoneRetentionMs, options.batchSize)}
    ),
    purged AS (
      DELETE FROM ${tables.keys} k
      USING old
      WHERE k.merchant_id = old.merchant_id AND k.operation = old.operation AND k.key = old.key
        AND k.recovery_point = 'expired'
      RETURNING 1
    )
    SELECT count(*)::int4 AS count FROM purged`);
}

/**
 * Up to `batchSize` keys at `point` that completed more than `olderThanMs` ago, oldest first,
 * locked; SKIP LOCKED, so a reaper never waits on a row someone else holds.
 */
function oldestAt(
  tables: Tables,
  point: 'completed' | 'expired',
  olderThanMs: number,
  batchSize: number,
): FragmentSqlToken {
  return sql.fragment`
    SELECT merchant_id, operation, key
    FROM ${tables.keys}
    WHERE recovery_point = ${point}
      AND completed_at < now() - ${olderThanMs}::float8 * interval '1 millisecond'
    ORDER BY completed_at
    LIMIT ${batchSize}
    FOR UPDATE SKIP LOCKED`;
}
