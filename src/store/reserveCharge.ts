import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import { insertChargeIntent, type ChargeIntent } from './chargeIntent.js';

/** The charge intent written by the reserve phase of a key resumed at `started`. */
export type ReserveInput = ScopedKey & ChargeIntent & { lockToken: string; chargeId: string };

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
      ${insertChargeIntent(tables, input, sql.fragment`advanced`)}
    )
    SELECT EXISTS (SELECT 1 FROM intent) AS reserved
  `);
  return reserved;
}
