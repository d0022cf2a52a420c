import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import {
  CHARGE_STATUSES,
  RECOVERY_POINTS,
  type ChargeStatus,
  type RecoveryPoint,
} from './keyState.js';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * What a charge holds besides its amount, in minor units: what was captured and refunded, and
 * what a capture or refunds in flight hold (a person resolving a parked refund or capture sees
 * what the charge has left).
 */
export type ChargeTotals = {
  /** Authorized only (`capture: false`): money moves once it is captured. */
  authorizedOnly: boolean;
  /** Captured; null for a charge that was never an authorization, or one not captured yet. */
  capturedMinor: number | null;
  /** Held by a capture in flight; null when none is. */
  captureReservedMinor: number | null;
  /** Held by refunds in flight. */
  refundReservedMinor: number;
  refundedMinor: number;
};

/** The local charge row of a key, as `inspect` shows it. */
export type ChargeDetails = {
  status: ChargeStatus;
  customerId: string;
  amountMinor: number;
  currency: string;
  description: string | null;
  metadata: Record<string, string> | null;
  providerKey: string;
  providerChargeId: string | null;
  declineCode: string | null;
  totals: ChargeTotals;
  /** When the intent was written: the key reached `reserved` then. */
  createdAt: Date;
  updatedAt: Date;
};

/** The refund or capture row of a key of operation `refund` or `capture`, as `inspect` shows it. */
export type MovementDetails = {
  kind: 'refund' | 'capture';
  /** The charge it moves money on. */
  chargeId: string;
  status: 'reserved' | 'succeeded' | 'failed' | 'refused' | 'cancelled';
  /** Null only for a refusal of an unknown charge. */
  amountMinor: number | null;
  currency: string | null;
  reason: string | null;
  refusal: string | null;
  providerKey: string;
  providerChargeId: string | null;
  providerMovementId: string | null;
  failureCode: string | null;
  /** The totals of the charge it moves money on (null for a refusal of an unknown charge). */
  chargeTotals: ChargeTotals | null;
  /** When it was reserved (or refused) with the claim. */
  createdAt: Date;
  updatedAt: Date;
};

/** Everything stored about one key, read in one statement. */
export type KeyDetails = {
  recoveryPoint: RecoveryPoint;
  requestHash: string;
  /** The canonical request text; empty for a tombstone (`expired`), whose request was dropped. */
  request: string;
  chargeId: string;
  attempts: number;
  leaseHeld: boolean;
  leaseRemainingMs: number;
  lockedUntil: Date | null;
  lastError: string | null;
  responseStatus: number | null;
  responseBody: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  failedAt: Date | null;
  charge: ChargeDetails | null;
  movement: MovementDetails | null;
};

const ms = z.number();

/** A charge's totals, read as one JSON object (null when the join found no charge). */
const totalsJson = z
  .object({
    authorizedOnly: z.boolean(),
    capturedMinor: z.number().nullable(),
    captureReservedMinor: z.number().nullable(),
    refundReservedMinor: z.number(),
    refundedMinor: z.number(),
  })
  .nullable();

/** The JSON `totalsJson` reads, of the charge joined as `alias` (`c`, or `mc` for a movement's). */
const totalsOf = (alias: 'c' | 'mc') => {
  const column = (name: string) => sql.identifier([alias, name]);
  return sql.fragment`CASE WHEN ${column('id')} IS NULL THEN NULL ELSE json_build_object(
    'authorizedOnly', ${column('authorized_only')},
    'capturedMinor', ${column('captured_minor')},
    'captureReservedMinor', ${column('capture_reserved_minor')},
    'refundReservedMinor', ${column('refund_reserved_minor')},
    'refundedMinor', ${column('refunded_minor')}) END`;
};

const detailsRow = z.object({
  recovery_point: z.enum(RECOVERY_POINTS),
  request_hash: z.string(),
  request: z.string(),
  charge_id: z.string(),
  attempts: z.number().int(),
  lease_held: z.boolean(),
  lease_remaining_ms: z.number().int(),
  locked_until_ms: ms.nullable(),
  last_error: z.string().nullable(),
  response_status: z.number().int().nullable(),
  response_body: z.string().nullable(),
  created_ms: ms,
  updated_ms: ms,
  completed_ms: ms.nullable(),
  failed_ms: ms.nullable(),
  charge_status: z.enum(CHARGE_STATUSES).nullable(),
  customer_id: z.string().nullable(),
  amount_minor: z.number().nullable(),
  currency: z.string().nullable(),
  description: z.string().nullable(),
  metadata: z.string().nullable(),
  provider_key: z.string().nullable(),
  provider_charge_id: z.string().nullable(),
  decline_code: z.string().nullable(),
  c_totals: totalsJson,
  charge_created_ms: ms.nullable(),
  charge_updated_ms: ms.nullable(),
  m_kind: z.enum(['refund', 'capture']).nullable(),
  m_charge_id: z.string().nullable(),
  m_status: z.enum(['reserved', 'succeeded', 'failed', 'refused', 'cancelled']).nullable(),
  m_amount_minor: z.number().nullable(),
  m_currency: z.string().nullable(),
  m_reason: z.string().nullable(),
  m_refusal: z.string().nullable(),
  m_provider_key: z.string().nullable(),
  m_provider_charge_id: z.string().nullable(),
  m_provider_movement_id: z.string().nullable(),
  m_failure_code: z.string().nullable(),
  m_created_ms: ms.nullable(),
  m_updated_ms: ms.nullable(),
  mc_totals: totalsJson,
});

const epochMs = (column: string) =>
  sql.fragment`(extract(epoch FROM ${sql.identifier(column.split('.'))}) * 1000)::float8`;

/** Reads a key and its charge row, or null when there is no such key. */
export async function readKeyDetails(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<KeyDetails | null> {
  const row = await db.maybeOne(sql.type(detailsRow)`
    SELECT k.recovery_point, k.request_hash, k.request, k.charge_id::text AS charge_id,
      k.attempts,
      (k.lock_token IS NOT NULL AND k.locked_until > now()) AS lease_held,
      GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::int4
        AS lease_remaining_ms,
      ${epochMs('k.locked_until')} AS locked_until_ms,
      k.last_error, k.response_status, k.response_body,
      ${epochMs('k.created_at')} AS created_ms,
      ${epochMs('k.updated_at')} AS updated_ms,
      ${epochMs('k.completed_at')} AS completed_ms,
      ${epochMs('k.failed_at')} AS failed_ms,
      c.status AS charge_status, c.customer_id, c.amount_minor::float8 AS amount_minor,
      c.currency, c.description, c.metadata::text AS metadata, c.provider_key,
      c.provider_charge_id, c.decline_code, ${totalsOf('c')} AS c_totals,
      ${epochMs('c.created_at')} AS charge_created_ms,
      ${epochMs('c.updated_at')} AS charge_updated_ms,
      m.kind AS m_kind, m.charge_id::text AS m_charge_id, m.status AS m_status,
      m.amount_minor::float8 AS m_amount_minor, m.currency AS m_currency, m.reason AS m_reason,
      m.refusal AS m_refusal, m.provider_key AS m_provider_key,
      m.provider_charge_id AS m_provider_charge_id,
      m.provider_movement_id AS m_provider_movement_id, m.failure_code AS m_failure_code,
      ${epochMs('m.created_at')} AS m_created_ms,
      ${epochMs('m.updated_at')} AS m_updated_ms,
      ${totalsOf('mc')} AS mc_totals
    FROM ${tables.keys} k
    LEFT JOIN ${tables.charges} c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    LEFT JOIN ${tables.movements} m ON m.merchant_id = k.merchant_id AND m.id = k.charge_id
    LEFT JOIN ${tables.charges} mc ON mc.merchant_id = m.merchant_id AND mc.id = m.charge_id
    WHERE k.merchant_id = ${scoped.merchantId}
      AND k.operation = ${scoped.operation}
      AND k.key = ${scoped.key}`);
  if (!row) return null;
  return {
    recoveryPoint: row.recovery_point,
    requestHash: row.request_hash,
    request: row.request,
    chargeId: row.charge_id,
    attempts: row.attempts,
    leaseHeld: row.lease_held,
    leaseRemainingMs: row.lease_remaining_ms,
    lockedUntil: dateOrNull(row.locked_until_ms),
    lastError: row.last_error,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    createdAt: new Date(row.created_ms),
    updatedAt: new Date(row.updated_ms),
    completedAt: dateOrNull(row.completed_ms),
    failedAt: dateOrNull(row.failed_ms),
    charge: chargeOf(row),
    movement: movementOf(row),
  };
}

function movementOf(row: z.infer<typeof detailsRow>): MovementDetails | null {
  if (
    row.m_kind === null ||
    row.m_charge_id === null ||
    row.m_status === null ||
    row.m_provider_key === null ||
    row.m_created_ms === null ||
    row.m_updated_ms === null
  ) {
    return null;
  }
  return {
    kind: row.m_kind,
    chargeId: row.m_charge_id,
    status: row.m_status,
    amountMinor: row.m_amount_minor,
    currency: row.m_currency,
    reason: row.m_reason,
    refusal: row.m_refusal,
    providerKey: row.m_provider_key,
    providerChargeId: row.m_provider_charge_id,
    providerMovementId: row.m_provider_movement_id,
    failureCode: row.m_failure_code,
    chargeTotals: row.mc_totals,
    createdAt: new Date(row.m_created_ms),
    updatedAt: new Date(row.m_updated_ms),
  };
}

function dateOrNull(epochMilliseconds: number | null): Date | null {
  return epochMilliseconds === null ? null : new Date(epochMilliseconds);
}

function chargeOf(row: z.infer<typeof detailsRow>): ChargeDetails | null {
  // Every column of the charge row is NOT NULL but these: one null means no row.
  if (
    row.charge_status === null ||
    row.customer_id === null ||
    row.amount_minor === null ||
    row.currency === null ||
    row.provider_key === null ||
    row.charge_created_ms === null ||
    row.charge_updated_ms === null ||
    row.c_totals === null
  ) {
    return null;
  }
  return {
    status: row.charge_status,
    customerId: row.customer_id,
    amountMinor: row.amount_minor,
    currency: row.currency,
    description: row.description,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, string>),
    providerKey: row.provider_key,
    providerChargeId: row.provider_charge_id,
    declineCode: row.decline_code,
    totals: row.c_totals,
    createdAt: new Date(row.charge_created_ms),
    updatedAt: new Date(row.charge_updated_ms),
  };
}
