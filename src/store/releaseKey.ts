import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Gives the lease back without changing the recovery point, so the next retry takes over at once
 * instead of waiting for the lease to run out. Fenced: only the holder's token releases it.
 */
export async function releaseKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string; lastError?: string },
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE ${tables.keys}
    SET lock_token = NULL, locked_until = NULL, updated_at = now(),
      last_error = ${input.lastError ?? null}
    WHERE merchant_id = ${input.merchantId}
      AND operation = ${input.operation}
      AND key = ${input.key}
      AND lock_token = ${input.lockToken}::uuid
  `);
}
