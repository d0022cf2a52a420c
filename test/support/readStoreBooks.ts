import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import type { Tables } from '../../src/store/tables.js';

/** An idempotency key of any operation, with what it guards (a charge's or a movement's id). */
export type StoredKey = {
  operation: string;
  key: string;
  recoveryPoint: string;
  subjectId: string;
  lastError: string | null;
  responseBody: string | null;
};

/** A charge row, with the money its refunds and captures moved and hold. */
export type StoredCharge = {
  id: string;
  status: string;
  providerKey: string;
  providerChargeId: string | null;
  amountMinor: number;
  authorizedOnly: boolean;
  capturedMinor: number | null;
  captureReservedMinor: number | null;
  refundReservedMinor: number;
  refundedMinor: number;
};

/** A refund or capture row. */
export type StoredMovement = {
  id: string;
  kind: 'refund' | 'capture';
  chargeId: string;
  amountMinor: number | null;
  providerKey: string;
  providerChargeId: string | null;
  providerMovementId: string | null;
  status: string;
  refusal: string | null;
};

/** Everything chargeonce's tables hold for one merchant. */
export type StoreBooks = {
  keys: StoredKey[];
  charges: StoredCharge[];
  movements: StoredMovement[];
};

const keyRow = z.object({
  operation: z.string(),
  key: z.string(),
  recovery_point: z.string(),
  subject_id: z.string(),
  last_error: z.string().nullable(),
  response_body: z.string().nullable(),
});

const chargeRow = z.object({
  id: z.string(),
  status: z.string(),
  provider_key: z.string(),
  provider_charge_id: z.string().nullable(),
  amount_minor: z.number(),
  authorized_only: z.boolean(),
  captured_minor: z.number().nullable(),
  capture_reserved_minor: z.number().nullable(),
  refund_reserved_minor: z.number(),
  refunded_minor: z.number(),
});

const movementRow = z.object({
  id: z.string(),
  kind: z.enum(['refund', 'capture']),
  charge_id: z.string(),
  amount_minor: z.number().nullable(),
  provider_key: z.string(),
  provider_charge_id: z.string().nullable(),
  provider_movement_id: z.string().nullable(),
  status: z.string(),
  refusal: z.string().nullable(),
});

const chargeColumns = sql.fragment`
  id::text, status, provider_key, provider_charge_id, amount_minor::float8 AS amount_minor,
  authorized_only, captured_minor::float8 AS captured_minor,
  capture_reserved_minor::float8 AS capture_reserved_minor,
  refund_reserved_minor::float8 AS refund_reserved_minor, refunded_minor::float8 AS refunded_minor`;

/** The columns of `movementRow`, from the movements table aliased `m`. */
const movementColumns = sql.fragment`
  m.id::text, m.kind, m.charge_id::text AS charge_id, m.amount_minor::float8 AS amount_minor,
  m.provider_key, m.provider_charge_id, m.provider_movement_id, m.status, m.refusal`;

/**
 * Reads a merchant's keys, charges and movements straight from the tables, in one transaction
 * (one snapshot under REPEATABLE READ), for a test to check against a provider's books.
 */
export async function readStoreBooks(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
): Promise<StoreBooks> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`);
    const keys = await tx.any(sql.type(keyRow)`
      SELECT operation, key, recovery_point, charge_id::text AS subject_id, last_error,
        response_body
      FROM ${tables.keys} WHERE merchant_id = ${merchantId}`);
    const charges = await tx.any(sql.type(chargeRow)`
      SELECT ${chargeColumns}
      FROM ${tables.charges} WHERE merchant_id = ${merchantId}`);
    const movements = await tx.any(sql.type(movementRow)`
      SELECT ${movementColumns}
      FROM ${tables.movements} m WHERE m.merchant_id = ${merchantId}`);
    return {
      keys: keys.map((k) => ({
        operation: k.operation,
        key: k.key,
        recoveryPoint: k.recovery_point,
        subjectId: k.subject_id,
        lastError: k.last_error,
        responseBody: k.response_body,
      })),
      charges: charges.map(toStoredCharge),
      movements: movements.map(toStoredMovement),
    };
  });
}

/** One charge row of a merchant, or null when there is none with that id. */
export async function readStoredCharge(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  chargeId: string,
): Promise<StoredCharge | null> {
  const c = await pool.maybeOne(sql.type(chargeRow)`
    SELECT ${chargeColumns}
    FROM ${tables.charges} WHERE merchant_id = ${merchantId} AND id = ${chargeId}::uuid`);
  return c && toStoredCharge(c);
}

/** The refund or capture a key guards, or null when the key or its row is not there. */
export async function readMovementOfKey(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  operation: 'refund' | 'capture',
  key: string,
): Promise<StoredMovement | null> {
  const m = await pool.maybeOne(sql.type(movementRow)`
    SELECT ${movementColumns}
    FROM ${tables.keys} k
    JOIN ${tables.movements} m ON m.merchant_id = k.merchant_id AND m.id = k.charge_id
    WHERE k.merchant_id = ${merchantId} AND k.operation = ${operation} AND k.key = ${key}`);
  return m && toStoredMovement(m);
}

function toStoredCharge(c: z.infer<typeof chargeRow>): StoredCharge {
  return {
    id: c.id,
    status: c.status,
    providerKey: c.provider_key,
    providerChargeId: c.provider_charge_id,
    amountMinor: c.amount_minor,
    authorizedOnly: c.authorized_only,
    capturedMinor: c.captured_minor,
    captureReservedMinor: c.capture_reserved_minor,
    refundReservedMinor: c.refund_reserved_minor,
    refundedMinor: c.refunded_minor,
  };
}

function toStoredMovement(m: z.infer<typeof movementRow>): StoredMovement {
  return {
    id: m.id,
    kind: m.kind,
    chargeId: m.charge_id,
    amountMinor: m.amount_minor,
    providerKey: m.provider_key,
    providerChargeId: m.provider_charge_id,
    providerMovementId: m.provider_movement_id,
    status: m.status,
    refusal: m.refusal,
  };
}
