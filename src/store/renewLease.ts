import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import { nowPlusMs, type ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Extends the lease of the attempt holding `lockToken` to `leaseMs` from now, fenced by the token:
 * returns false (and writes nothing) when another attempt took the key over or it was finished,
 * parked or released meanwhile. A lease that ran out but was not taken is still ours to renew:
 * nobody else can have been at the provider under the key without taking it first.
 */
export async function renewLease(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string; leaseMs: number },
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ renewed: z.boolean() }))`
    WITH renewed AS (
      UPDATE ${tables.keys}
      SET locked_until = ${nowPlusMs(input.leaseMs)}, updated_at = now()
      WHERE merchant_id = ${input.merchantId}
        AND operation = ${input.operation}
        AND key = ${input.key}
        AND lock_token = ${input.lockToken}::uuid
        AND recovery_point IN ('started', 'reserved')
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM renewed) AS renewed`);
}
