import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { KeyCounts } from '../observability/createKeyGauges.js';
import type { Tables } from './tables.js';

const unfinishedRow = z.object({
  started: z.number().int(),
  reserved: z.number().int(),
  failed: z.number().int(),
  oldest_unfinished_ms: z.number().nullable(),
});

/**
 * What the unfinished-key gauges show: keys at `started`, `reserved` and `failed`, and the age
 * of the oldest at `started` or `reserved`. Unlike `readKeyStatus` (a command's, run when a
 * person asks), it is sampled on a schedule by every engine with a meter, so it reads only the
 * unfinished keys, through their partial indexes (`idempotency_keys_unfinished_idx`,
 * `idempotency_keys_failed_idx`), never the completed keys the retention window keeps.
 */
export async function readUnfinishedKeys(
  db: CommonQueryMethods,
  tables: Tables,
): Promise<KeyCounts> {
  const row = await db.one(sql.type(unfinishedRow)`
    SELECT
      count(*) FILTER (WHERE recovery_point = 'started')::int4 AS started,
      count(*) FILTER (WHERE recovery_point = 'reserved')::int4 AS reserved,
      (SELECT count(*)::int4 FROM ${tables.keys} WHERE recovery_point = 'failed') AS failed,
      (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_unfinished_ms
    FROM ${tables.keys}
    WHERE recovery_point IN ('started', 'reserved')`);
  return {
    byRecoveryPoint: { started: row.started, reserved: row.reserved, failed: row.failed },
    oldestUnfinishedMs: row.oldest_unfinished_ms,
  };
}
