import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Tables } from './tables.js';

/** A key that needs a person, and why. */
export type StuckKey = {
  merchantId: string;
  operation: string;
  key: string;
  chargeId: string;
  attempts: number;
  /** Why the recovery worker gave up (its last error). */
  reason: string;
  createdAt: Date;
  failedAt: Date;
};

const failedRow = z.object({
  merchant_id: z.string(),
  operation: z.string(),
  key: z.string(),
  charge_id: z.string(),
  attempts: z.number().int(),
  last_error: z.string().nullable(),
  created_ms: z.number(),
  updated_ms: z.number(),
});

/** Keys parked in `failed`, oldest first. */
export async function listFailedKeys(
  db: CommonQueryMethods,
  tables: Tables,
  limit: number,
): Promise<StuckKey[]> {
  const rows = await db.any(sql.type(failedRow)`
    SELECT merchant_id, operation, key, charge_id::text AS charge_id, attempts, last_error,
      (extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
      -- Keys parked before failed_at existed (schema version 4) were last touched when parked.
      (extract(epoch FROM coalesce(failed_at, updated_at)) * 1000)::float8 AS updated_ms
    FROM ${tables.keys}
    WHERE recovery_point = 'failed'
    ORDER BY updated_at
    LIMIT ${limit}`);
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    operation: row.operation,
    key: row.key,
    chargeId: row.charge_id,
    attempts: row.attempts,
    reason: row.last_error ?? 'unknown',
    createdAt: new Date(row.created_ms),
    failedAt: new Date(row.updated_ms),
  }));
}
