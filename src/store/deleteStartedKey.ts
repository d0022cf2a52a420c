import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Deletes an abandoned key still at `started`. Nothing was reserved and the provider was never
 * called under it, so forgetting it is safe, and a retry with the same key starts afresh.
 * Fenced by the lock token; returns false when the lease was lost.
 */
export async function deleteStartedKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string },
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ deleted: z.boolean() }))`
    WITH deleted AS (
      DELETE FROM ${tables.keys}
      WHERE merchant_id = ${input.merchantId}
        AND operation = ${input.operation}
        AND key = ${input.key}
        AND lock_token = ${input.lockToken}::uuid
        AND recovery_point = 'started'
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM deleted) AS deleted`);
}
