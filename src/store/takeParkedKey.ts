import { z } from 'zod';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { CHARGE_STATUSES, nowPlusMs, type ChargeStatus, type ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** A parked key a person's action now holds, with what finishing it needs. */
export type ParkedKey = {
  chargeId: string;
  /** The canonical request text stored at claim time. */
  request: string;
  /** Null when the key was parked before its charge intent was written. */
  providerKey: string | null;
  chargeStatus: ChargeStatus | null;
};

const parkedRow = z.object({
  charge_id: z.string(),
  request: z.string(),
  provider_key: z.string().nullable(),
  charge_status: z.enum(CHARGE_STATUSES).nullable(),
});

/**
 * The UPDATE that takes a parked key (for a `taken` CTE): a fresh lock token and lease, only
 * while the key is in `failed`. Returns the key's merchant, guarded id and stored request.
 */
export function takeParkedUpdate(
  tables: Tables,
  input: ScopedKey & { lockToken: string; leaseMs: number },
): FragmentSqlToken {
  return sql.fragment`
    UPDATE ${tables.keys}
    SET lock_token = ${input.lockToken}::uuid, locked_until = ${nowPlusMs(input.leaseMs)}
    WHERE merchant_id = ${input.merchantId}
      AND operation = ${input.operation}
      AND key = ${input.key}
      AND recovery_point = 'failed'
    RETURNING merchant_id, charge_id, request`;
}

/**
 * Takes a key parked in `failed` with a fresh lock token, in the statement that checks it is
 * parked: the first step of a resolve or requeue, in that action's transaction. The row lock it
 * takes holds until COMMIT, so of a racing resolve, requeue or second resolve exactly one finds
 * the key parked; the others wait, then find it moved on. The action's later writes are fenced
 * by the token. `updated_at` is left alone: until the key moves, it is when it was parked.
 * Returns null when no parked key matched.
 */
export async function takeParkedKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string; leaseMs: number },
): Promise<ParkedKey | null> {
  const row = await db.maybeOne(sql.type(parkedRow)`
    WITH taken AS (${takeParkedUpdate(tables, input)})
    SELECT t.charge_id::text AS charge_id, t.request, c.provider_key, c.status AS charge_status
    FROM taken t
    LEFT JOIN ${tables.charges} c ON c.merchant_id = t.merchant_id AND c.id = t.charge_id`);
  return row
    ? {
        chargeId: row.charge_id,
        request: row.request,
        providerKey: row.provider_key,
        chargeStatus: row.charge_status,
      }
    : null;
}
