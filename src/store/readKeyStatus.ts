import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { RecoveryPoint } from './keyState.js';
import type { Tables } from './tables.js';

/** What `chargeonce status` shows. */
export type KeyStatus = {
  /** Keys per recovery point, all operations. */
  byRecoveryPoint: Record<RecoveryPoint, number>;
  /**
   * Unfinished keys no attempt holds (released by a transient failure, or their lease run out):
   * what a sweep picks up once they have been idle for its grace.
   */
  abandoned: number;
  /** Age of the oldest unfinished key in milliseconds, or null when none. */
  oldestUnfinishedMs: number | null;
};

const statusRow = z.object({
  started: z.number().int(),
  reserved: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  expired: z.number().int(),
  abandoned: z.number().int(),
  oldest_unfinished_ms: z.number().nullable(),
});

/** Counts keys per recovery point in one scan. */
export async function readKeyStatus(db: CommonQueryMethods, tables: Tables): Promise<KeyStatus> {
  const row = await db.one(sql.type(statusRow)`
    SELECT
      count(*) FILTER (WHERE recovery_point = 'started')::int4 AS started,
      count(*) FILTER (WHERE recovery_point = 'reserved')::int4 AS reserved,
      count(*) FILTER (WHERE recovery_point = 'completed')::int4 AS completed,
      count(*) FILTER (WHERE recovery_point = 'failed')::int4 AS failed,
      count(*) FILTER (WHERE recovery_point = 'expired')::int4 AS expired,
      count(*) FILTER (WHERE recovery_point IN ('started', 'reserved')
        AND (lock_token IS NULL OR locked_until <= now()))::int4 AS abandoned,
      (extract(epoch FROM now() - min(created_at)
        FILTER (WHERE recovery_point IN ('started', 'reserved'))) * 1000)::float8
        AS oldest_unfinished_ms
    FROM ${tables.keys}`);
  return {
    byRecoveryPoint: {
      started: row.started,
      reserved: row.reserved,
      completed: row.completed,
      failed: row.failed,
      expired: row.expired,
    },
    abandoned: row.abandoned,
    oldestUnfinishedMs: row.oldest_unfinished_ms,
  };
}
