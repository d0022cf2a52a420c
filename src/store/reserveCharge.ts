import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** The charge intent written by the reserve phase of a key resumed at `started`. */
export type ReserveInput = ScopedKey & {
  lockToken: string;
  chargeId: string;
  providerKey: string;
  customerId: string;
  amountMinor: number;
  currency: string;
  description: string | null;
  metadata: Record<string, string> | null;
};

/**
 * Moves a key from `started` to `reserved` and writes the charge intent, in one statement, fenced
 * by the lock token. Returns false when the lease was lost (nothing written).
 */
export async function reserveCharge(
  db: CommonQueryMethods,
  tables: Tables,
  input: ReserveInput,
): Promise<boolean> {
  const reserved = await db.oneFirst(sql.type(z.object({ reserved: z.boolean() }))`
    WITH advanced AS (
      UPDATE ${tables.keys}
      SET recovery_point = 'reserved', updated_at = now()
      WHERE merchant_id = ${input.merchantId}
        AND operation = ${input.operation}
        AND key = ${input.key}
        AND lock_token = ${input.lockToken}::uuid
        AND recovery_point = 'started'
      RETURNING charge_id
    ), intent AS (
      INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
        description, metadata, provider_key, status)
      SELECT ${input.merchantId}, charge_id, ${input.customerId}, ${input.amountMinor},
        ${input.currency}, ${input.description},
        ${input.metadata === null ? null : sql.jsonb(input.metadata)}, ${input.providerKey},
        'reserved'
      FROM advanced
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM intent) AS reserved
  `);
  return reserved;
}
