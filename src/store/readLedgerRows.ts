import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Tables } from './tables.js';

/** A local charge with the key that guards it (if the key was not reaped). */
export type LocalChargeRow = {
  merchantId: string;
  chargeId: string;
  providerKey: string;
  providerChargeId: string | null;
  status: string;
  amountMinor: number;
  currency: string;
  key: string | null;
  operation: string | null;
  recoveryPoint: string | null;
  responseStatus: number | null;
  responseBody: string | null;
  /** Why the key was parked, for a key in `failed`. */
  lastError: string | null;
};

const ledgerRow = z.object({
  merchant_id: z.string(),
  charge_id: z.string(),
  provider_key: z.string(),
  provider_charge_id: z.string().nullable(),
  status: z.string(),
  amount_minor: z.number(),
  currency: z.string(),
  key: z.string().nullable(),
  operation: z.string().nullable(),
  recovery_point: z.string().nullable(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
  last_error: z.string().nullable(),
});

const keyOnlyRow = z.object({
  merchant_id: z.string(),
  operation: z.string(),
  key: z.string(),
  recovery_point: z.string(),
});

/** Every local charge (optionally of some merchants only), joined to its key. */
export async function readLedgerRows(
  db: CommonQueryMethods,
  tables: Tables,
  merchantIds: readonly string[] | null,
): Promise<{
  charges: LocalChargeRow[];
  keysWithoutCharge: ReadonlyArray<z.infer<typeof keyOnlyRow>>;
}> {
  const merchantFilter =
    merchantIds === null
      ? sql.fragment`true`
      : sql.fragment`c.merchant_id = ANY(${sql.array(merchantIds, 'text')})`;
  const rows = await db.any(sql.type(ledgerRow)`
    SELECT c.merchant_id, c.id::text AS charge_id, c.provider_key, c.provider_charge_id,
      c.status, c.amount_minor::float8 AS amount_minor, c.currency, k.key, k.operation, k.recovery_point,
      k.response_status, k.response_body, k.last_error
    FROM ${tables.charges} c
    LEFT JOIN ${tables.keys} k ON k.merchant_id = c.merchant_id AND k.charge_id = c.id
    WHERE ${merchantFilter}`);
  // Keys at `started` have no charge row yet.
  const keyFilter =
    merchantIds === null
      ? sql.fragment`true`
      : sql.fragment`k.merchant_id = ANY(${sql.array(merchantIds, 'text')})`;
  const keysWithoutCharge = await db.any(sql.type(keyOnlyRow)`
    SELECT k.merchant_id, k.operation, k.key, k.recovery_point
    FROM ${tables.keys} k
    WHERE ${keyFilter}
      AND NOT EXISTS (
        SELECT 1 FROM ${tables.charges} c WHERE c.merchant_id = k.merchant_id AND c.id = k.charge_id
      )`);
  return {
    charges: rows.map((r) => ({
      merchantId: r.merchant_id,
      chargeId: r.charge_id,
      providerKey: r.provider_key,
      providerChargeId: r.provider_charge_id,
      status: r.status,
      amountMinor: r.amount_minor,
      currency: r.currency,
      key: r.key,
      operation: r.operation,
      recoveryPoint: r.recovery_point,
      responseStatus: r.response_status,
      responseBody: r.response_body,
      lastError: r.last_error,
    })),
    keysWithoutCharge,
  };
}
