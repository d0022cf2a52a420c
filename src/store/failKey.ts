import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Parks an unfinished key in `failed`, with the reason a person will read. Nothing retries it
 * automatically after this (until `requeue` or `resolve`). `failed_at` keeps when, for the key's
 * history. Fenced by the lock token; returns false when the lease was lost.
 */
export async function failKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ScopedKey & { lockToken: string; reason: string },
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ failed: z.boolean() }))`
    WITH failed AS (
      UPDATE ${tables.keys}
      SET recovery_point = 'failed', lock_token = NULL, locked_until = NULL,
        last_error = ${input.reason}, failed_at = now(), updated_at = now()
      WHERE merchant_id = ${input.merchantId}
        AND operation = ${input.operation}
        AND key = ${input.key}
        -- The holder parks it, or anyone once it was released: a released key has nobody at
        -- the provider. A key another attempt took over is left to that attempt.
        AND (lock_token = ${input.lockToken}::uuid OR lock_token IS NULL)
        AND recovery_point IN ('started', 'reserved')
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM failed) AS failed`);
}
