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

/**
 * Reads a row of {@link keyStateColumns}, checking each column's type as it goes: on the hot
 * path of every replay, so by hand rather than through a schema library (a column whose type
 * drifted still fails loudly, naming the column).
 */
export function readKeyState(row: Record<string, unknown>): KeyState {
  return {
    requestHash: text(row, 'request_hash'),
    recoveryPoint: oneOf(row, 'recovery_point', RECOVERY_POINTS),
    chargeId: text(row, 'charge_id'),
    leaseHeld: flag(row, 'lease_held'),
    leaseRemainingMs: integer(row, 'lease_remaining_ms'),
    attempts: integer(row, 'attempts'),
    responseStatus: nullable(row, 'response_status', integer),
    responseBody: nullable(row, 'response_body', text),
    chargeStatus: nullable(row, 'charge_status', (r, c) => oneOf(r, c, CHARGE_STATUSES)),
    providerKey: nullable(row, 'provider_key', text),
    providerChargeId: nullable(row, 'provider_charge_id', text),
  };
}

/** A row as a driver returns it; the readers below check each column's type. */
export type Row = Record<string, unknown>;

function drift(column: string, expected: string, value: unknown): Error {
  return new Error(
    `chargeonce: column ${column} of a key row should be ${expected}, got ${typeof value}`,
  );
}

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw drift(column, 'text', value);
  return value;
}

export function integer(row: Row, column: string): number {
  const value = row[column];
  if (!Number.isInteger(value)) throw drift(column, 'an integer', value);
  return value as number;
}

export function flag(row: Row, column: string): boolean {
  const value = row[column];
  if (typeof value !== 'boolean') throw drift(column, 'a boolean', value);
  return value;
}

export function oneOf<T extends string>(row: Row, column: string, allowed: readonly T[]): T {
  const value = row[column];
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw drift(column, `one of ${allowed.join(', ')}`, value);
  }
  return value as T;
}

export function nullable<T>(
  row: Row,
  column: string,
  read: (row: Row, column: string) => T,
): T | null {
  return row[column] === null ? null : read(row, column);
}

/**
 * The columns {@link readKeyState} reads, over `keys k LEFT JOIN charges c`. The claim statement
 * (`hotStatements`) returns the same columns for an existing key: change both together.
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
