import { z } from 'zod';
import { sql, type FragmentSqlToken } from 'slonik';
import type { Tables } from './tables.js';

/** A key's identity: unique per merchant and operation. */
export type ScopedKey = { merchantId: string; operation: string; key: string };

export const RECOVERY_POINTS = ['started', 'reserved', 'completed', 'failed', 'expired'] as const;
/**
 * Where an attempt resumes: each point is committed with the work of its phase. `failed` is
 * where the sweeper parks a key it gave up on after `maxAttempts`: it needs a person. `expired`
 * is a tombstone the reaper left of a completed key: its response is gone, a retry is refused.
 */
export type RecoveryPoint = (typeof RECOVERY_POINTS)[number];

export const CHARGE_STATUSES = [
  'reserved',
  'succeeded',
  'declined',
  'rejected',
  'cancelled',
] as const;
/** The local charge's status. */
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/** The row shape of {@link keyStateColumns}, checked at the boundary. */
export const keyStateRow = z.object({
  request_hash: z.string(),
  recovery_point: z.enum(RECOVERY_POINTS),
  charge_id: z.string(),
  lease_held: z.boolean(),
  lease_remaining_ms: z.number().int(),
  attempts: z.number().int(),
  response_status: z.number().int().nullable(),
  response_body: z.string().nullable(),
  charge_status: z.enum(CHARGE_STATUSES).nullable(),
  provider_key: z.string().nullable(),
  provider_charge_id: z.string().nullable(),
});

/** An existing key as the engine sees it: camelCase, no raw row. */
export type KeyState = {
  requestHash: string;
  recoveryPoint: RecoveryPoint;
  chargeId: string;
  /** True while another attempt's lease has not run out. */
  leaseHeld: boolean;
  leaseRemainingMs: number;
  attempts: number;
  responseStatus: number | null;
  responseBody: string | null;
  chargeStatus: ChargeStatus | null;
  providerKey: string | null;
  providerChargeId: string | null;
};

export function toKeyState(row: z.infer<typeof keyStateRow>): KeyState {
  return {
    requestHash: row.request_hash,
    recoveryPoint: row.recovery_point,
    chargeId: row.charge_id,
    leaseHeld: row.lease_held,
    leaseRemainingMs: row.lease_remaining_ms,
    attempts: row.attempts,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    chargeStatus: row.charge_status,
    providerKey: row.provider_key,
    providerChargeId: row.provider_charge_id,
  };
}

/**
 * The columns of {@link keyStateRow}, over `keys k LEFT JOIN charges c`. The migration's
 * `claim_key` function returns the same columns for an existing key: change both together.
 */
export const keyStateColumns: FragmentSqlToken = sql.fragment`
  k.request_hash,
  k.recovery_point,
  k.charge_id::text AS charge_id,
  (k.lock_token IS NOT NULL AND k.locked_until > now()) AS lease_held,
  GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::int4 AS lease_remaining_ms,
  k.attempts,
  k.response_status,
  k.response_body,
  c.status AS charge_status,
  c.provider_key,
  c.provider_charge_id`;

/** `keys k LEFT JOIN charges c` for one scoped key. */
export function keyStateFrom(tables: Tables, scoped: ScopedKey): FragmentSqlToken {
  return sql.fragment`
    ${tables.keys} k
    LEFT JOIN ${tables.charges} c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE k.merchant_id = ${scoped.merchantId}
      AND k.operation = ${scoped.operation}
      AND k.key = ${scoped.key}`;
}

/** `now() + ms`, computed by the database so every lease uses one clock. */
export function nowPlusMs(ms: number): FragmentSqlToken {
  return sql.fragment`now() + ${ms}::float8 * interval '1 millisecond'`;
}
