import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Tables } from './tables.js';

/** A charge's money as its row holds it: what refunds and captures moved and hold. */
export type ChargeTotalsRow = {
  merchantId: string;
  chargeId: string;
  status: string;
  authorizedOnly: boolean;
  amountMinor: number;
  providerChargeId: string | null;
  capturedMinor: number | null;
  captureReservedMinor: number | null;
  refundReservedMinor: number;
  refundedMinor: number;
};

/** A refund or capture with the key that guards it (a tombstone once reaped). */
export type LocalMovementRow = {
  merchantId: string;
  movementId: string;
  kind: 'refund' | 'capture';
  chargeId: string;
  amountMinor: number | null;
  currency: string | null;
  providerKey: string;
  providerMovementId: string | null;
  status: string;
  refusal: string | null;
  key: string | null;
  recoveryPoint: string | null;
  responseStatus: number | null;
  responseBody: string | null;
  /** Why the key was parked, for a key in `failed`. */
  lastError: string | null;
};

const totalsRow = z.object({
  merchant_id: z.string(),
  charge_id: z.string(),
  status: z.string(),
  authorized_only: z.boolean(),
  amount_minor: z.number(),
  provider_charge_id: z.string().nullable(),
  captured_minor: z.number().nullable(),
  capture_reserved_minor: z.number().nullable(),
  refund_reserved_minor: z.number(),
  refunded_minor: z.number(),
});

const movementRow = z.object({
  merchant_id: z.string(),
  movement_id: z.string(),
  kind: z.enum(['refund', 'capture']),
  charge_id: z.string(),
  amount_minor: z.number().nullable(),
  currency: z.string().nullable(),
  provider_key: z.string(),
  provider_movement_id: z.string().nullable(),
  status: z.string(),
  refusal: z.string().nullable(),
  key: z.string().nullable(),
  recovery_point: z.string().nullable(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
  last_error: z.string().nullable(),
});

/**
 * The money side of the engine's tables, for the reconciler: every charge that refunds or
 * captures concern (authorized only, or with a movement), and every refund and capture joined
 * to its key, of some merchants only (or all). Read in one snapshot, so a charge's totals and
 * its movements are of the same moment.
 *
 * This reads the store from the chaos harness because nothing on the charge path needs it; it is
 * a read, never a write.
 */
export async function readMovementRows(
  db: CommonQueryMethods,
  tables: Tables,
  merchantIds: readonly string[] | null,
): Promise<{ charges: ChargeTotalsRow[]; movements: LocalMovementRow[] }> {
  const chargeFilter =
    merchantIds === null
      ? sql.fragment`true`
      : sql.fragment`c.merchant_id = ANY(${sql.array(merchantIds, 'text')})`;
  const movementFilter =
    merchantIds === null
      ? sql.fragment`true`
      : sql.fragment`m.merchant_id = ANY(${sql.array(merchantIds, 'text')})`;
  // One statement: both sides from one snapshot.
  const rows = await db.any(sql.type(z.object({ totals: z.unknown(), movements: z.unknown() }))`
    SELECT
      (SELECT coalesce(json_agg(t), '[]'::json) FROM (
        SELECT c.merchant_id, c.id::text AS charge_id, c.status, c.authorized_only,
          c.amount_minor::float8 AS amount_minor, c.provider_charge_id,
          c.captured_minor::float8 AS captured_minor,
          c.capture_reserved_minor::float8 AS capture_reserved_minor,
          c.refund_reserved_minor::float8 AS refund_reserved_minor,
          c.refunded_minor::float8 AS refunded_minor
        FROM ${tables.charges} c
        WHERE ${chargeFilter}
          AND (c.authorized_only OR c.refunded_minor > 0 OR c.refund_reserved_minor > 0
            OR EXISTS (SELECT 1 FROM ${tables.movements} m
                       WHERE m.merchant_id = c.merchant_id AND m.charge_id = c.id))
      ) t) AS totals,
      (SELECT coalesce(json_agg(v), '[]'::json) FROM (
        SELECT m.merchant_id, m.id::text AS movement_id, m.kind, m.charge_id::text AS charge_id,
          m.amount_minor::float8 AS amount_minor, m.currency, m.provider_key,
          m.provider_movement_id, m.status, m.refusal, k.key, k.recovery_point,
          k.response_status, k.response_body, k.last_error
        FROM ${tables.movements} m
        LEFT JOIN ${tables.keys} k
          ON k.merchant_id = m.merchant_id AND k.operation = m.kind AND k.charge_id = m.id
        WHERE ${movementFilter}
      ) v) AS movements`);
  const first = rows[0];
  const charges = z.array(totalsRow).parse(first?.totals ?? []);
  const movements = z.array(movementRow).parse(first?.movements ?? []);
  return {
    charges: charges.map((r) => ({
      merchantId: r.merchant_id,
      chargeId: r.charge_id,
      status: r.status,
      authorizedOnly: r.authorized_only,
      amountMinor: r.amount_minor,
      providerChargeId: r.provider_charge_id,
      capturedMinor: r.captured_minor,
      captureReservedMinor: r.capture_reserved_minor,
      refundReservedMinor: r.refund_reserved_minor,
      refundedMinor: r.refunded_minor,
    })),
    movements: movements.map((r) => ({
      merchantId: r.merchant_id,
      movementId: r.movement_id,
      kind: r.kind,
      chargeId: r.charge_id,
      amountMinor: r.amount_minor,
      currency: r.currency,
      providerKey: r.provider_key,
      providerMovementId: r.provider_movement_id,
      status: r.status,
      refusal: r.refusal,
      key: r.key,
      recoveryPoint: r.recovery_point,
      responseStatus: r.response_status,
      responseBody: r.response_body,
      lastError: r.last_error,
    })),
  };
}
