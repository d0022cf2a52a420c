import { z } from 'zod';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import {
  CHARGE_STATUSES,
  RECOVERY_POINTS,
  type ChargeStatus,
  type RecoveryPoint,
} from './keyState.js';
import type { Tables } from './tables.js';

/** Where a page starts: just after the key with these sort values. */
export type KeyPosition = {
  /** `created_at` in UTC to the microsecond (`YYYY-MM-DDTHH:MM:SS.ffffff`): exact, unlike a Date. */
  createdAt: string;
  merchantId: string;
  operation: string;
  key: string;
};

/** One key of a listing. */
export type KeySummaryRow = {
  merchantId: string;
  operation: string;
  key: string;
  recoveryPoint: RecoveryPoint;
  /**
   * The local id the key's use was given: a charge key's charge; for a refund or capture key,
   * that refund's or capture's own id (`inspect` names the charge it moves money on).
   */
  chargeId: string;
  /** A charge key's charge status; null for a refund or capture key. */
  chargeStatus: ChargeStatus | null;
  attempts: number;
  leaseHeld: boolean;
  lastError: string | null;
  responseStatus: number | null;
  createdAt: Date;
  updatedAt: Date;
  /** The key's sort values, for the cursor of the next page. */
  position: KeyPosition;
};

/** What to list. */
export type KeyFilter = {
  point: RecoveryPoint | null;
  merchantId: string | null;
  operation: string | null;
  /** Only keys created at least this many milliseconds ago (by PostgreSQL's clock). */
  olderThanMs: number | null;
  after: KeyPosition | null;
  limit: number;
};

const summaryRow = z.object({
  merchant_id: z.string(),
  operation: z.string(),
  key: z.string(),
  recovery_point: z.enum(RECOVERY_POINTS),
  charge_id: z.string(),
  charge_status: z.enum(CHARGE_STATUSES).nullable(),
  attempts: z.number().int(),
  lease_held: z.boolean(),
  last_error: z.string().nullable(),
  response_status: z.number().int().nullable(),
  created_ms: z.number(),
  updated_ms: z.number(),
  created_exact: z.string(),
});

/**
 * Up to `limit` keys in (created_at, merchant_id, operation, key) order, after `after`: keyset
 * pagination, so a page costs the same however deep it is. `created_at` never changes, so a walk
 * lists once every key that was committed before it began and still matches when its page is
 * read. A key claimed during the walk may be left out: `created_at` is when its claim's
 * transaction began, and a claim that commits late (a slow `reserve` hook) lands behind pages
 * already read; so may a key that came to match meanwhile (parked during the walk). Parked and
 * unfinished keys are served by partial indexes; a listing of completed keys without a merchant
 * scans.
 */
export async function listKeysPage(
  db: CommonQueryMethods,
  tables: Tables,
  filter: KeyFilter,
): Promise<KeySummaryRow[]> {
  const conditions: FragmentSqlToken[] = [sql.fragment`true`];
  if (filter.point !== null) conditions.push(sql.fragment`k.recovery_point = ${filter.point}`);
  if (filter.merchantId !== null) {
    conditions.push(sql.fragment`k.merchant_id = ${filter.merchantId}`);
  }
  if (filter.operation !== null) conditions.push(sql.fragment`k.operation = ${filter.operation}`);
  if (filter.olderThanMs !== null) {
    conditions.push(
      sql.fragment`k.created_at <= now() - ${filter.olderThanMs}::float8 * interval '1 millisecond'`,
    );
  }
  const { after } = filter;
  if (after !== null) {
    // A row comparison: the index on (created_at, merchant_id, operation, key) seeks to it.
    conditions.push(sql.fragment`
      (k.created_at, k.merchant_id, k.operation, k.key)
        > (${after.createdAt}::timestamp AT TIME ZONE 'UTC', ${after.merchantId}::text,
           ${after.operation}::text, ${after.key}::text)`);
  }
  const rows = await db.any(sql.type(summaryRow)`
    SELECT k.merchant_id, k.operation, k.key, k.recovery_point, k.charge_id::text AS charge_id,
      c.status AS charge_status, k.attempts,
      (k.lock_token IS NOT NULL AND k.locked_until > now()) AS lease_held,
      k.last_error, k.response_status,
      (extract(epoch FROM k.created_at) * 1000)::float8 AS created_ms,
      (extract(epoch FROM k.updated_at) * 1000)::float8 AS updated_ms,
      to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS created_exact
    FROM ${tables.keys} k
    LEFT JOIN ${tables.charges} c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY k.created_at, k.merchant_id, k.operation, k.key
    LIMIT ${filter.limit}`);
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    operation: row.operation,
    key: row.key,
    recoveryPoint: row.recovery_point,
    chargeId: row.charge_id,
    chargeStatus: row.charge_status,
    attempts: row.attempts,
    leaseHeld: row.lease_held,
    lastError: row.last_error,
    responseStatus: row.response_status,
    createdAt: new Date(row.created_ms),
    updatedAt: new Date(row.updated_ms),
    position: {
      createdAt: row.created_exact,
      merchantId: row.merchant_id,
      operation: row.operation,
      key: row.key,
    },
  }));
}
