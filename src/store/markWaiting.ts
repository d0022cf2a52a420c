import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Marks a key in progress as waited on, so its completion sends a NOTIFY. Returns false when the
 * key is no longer in progress (completed, parked, gone): no NOTIFY will come, look again now. The
 * row lock orders this against the completion: a mark committed first is seen by it, a mark that
 * waited for it finds the key done.
 */
export async function markWaiting(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<boolean> {
  const marked = await db.maybeOne(sql.type(z.object({ marked: z.boolean() }))`
    UPDATE ${tables.keys} SET has_waiters = true
    WHERE merchant_id = ${scoped.merchantId} AND operation = ${scoped.operation}
      AND key = ${scoped.key} AND recovery_point IN ('started', 'reserved')
    RETURNING true AS marked`);
  return marked !== null;
}
