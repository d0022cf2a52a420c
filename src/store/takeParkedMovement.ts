import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import { takeParkedUpdate } from './takeParkedKey.js';
import type { Tables } from './tables.js';

/** A parked refund or capture key a person's action now holds, with its movement row. */
export type ParkedMovement = {
  /** The refund's or capture's id (the key's `charge_id`). */
  movementId: string;
  /** The movement row; null if the key has none (never written so by chargeonce). */
  movement: {
    kind: string;
    status: string;
    /** The charge it moves money on. */
    chargeId: string;
    /** What is held on the charge; null only for a refusal of an unknown charge. */
    amountMinor: number | null;
    currency: string | null;
    reason: string | null;
    providerKey: string;
  } | null;
};

const parkedRow = z.object({
  movement_id: z.string(),
  kind: z.string().nullable(),
  status: z.string().nullable(),
  charge_id: z.string().nullable(),
  amount_minor: z.number().nullable(),
  currency: z.string().nullable(),
  reason: z.string().nullable(),
  provider_key: z.string().nullable(),
});

/**
 * Takes a refund or capture key parked in `failed` with a fresh lock token, in the statement
 * that checks it is parked, and reads its movement: the first step of resolving it, in the
 * resolve's transaction. As `takeParkedKey` does for a charge: the row lock holds until COMMIT,
 * so of a racing resolve, requeue, second resolve or sweeper exactly one finds the key parked
 * (the sweeper only picks keys at `started` or `reserved`); the resolve's writes are fenced by
 * the token. The movement cannot change meanwhile: only the key's holder completes it.
 * Returns null when no parked key matched.
 */
export async function takeParkedMovement(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string; leaseMs: number },
): Promise<ParkedMovement | null> {
  const row = await db.maybeOne(sql.type(parkedRow)`
    WITH taken AS (${takeParkedUpdate(tables, input)})
    SELECT t.charge_id::text AS movement_id, m.kind, m.status, m.charge_id::text AS charge_id,
      m.amount_minor::float8 AS amount_minor, m.currency, m.reason, m.provider_key
    FROM taken t
    LEFT JOIN ${tables.movements} m ON m.merchant_id = t.merchant_id AND m.id = t.charge_id`);
  if (!row) return null;
  const { kind, status, charge_id: chargeId, provider_key: providerKey } = row;
  return {
    movementId: row.movement_id,
    movement:
      kind === null || status === null || chargeId === null || providerKey === null
        ? null
        : {
            kind,
            status,
            chargeId,
            amountMinor: row.amount_minor,
            currency: row.currency,
            reason: row.reason,
            providerKey,
          },
  };
}
