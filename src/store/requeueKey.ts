import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * Puts a parked (`failed`) key back where the sweeper and client retries pick it up: `reserved`
 * when its charge intent (or a refund's or capture's movement) exists (the provider is asked
 * before anything else happens), else `started`. The attempt count starts again; the reason it was parked stays in `last_error`,
 * prefixed, so the history is not lost. Returns false when no parked key matched.
 */
export async function requeueKey(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ requeued: z.boolean() }))`
    WITH requeued AS (
      UPDATE ${tables.keys} k
      SET recovery_point = CASE WHEN EXISTS (
            SELECT 1 FROM ${tables.charges} c
            WHERE c.merchant_id = k.merchant_id AND c.id = k.charge_id
          ) OR EXISTS (
            -- A refund's or capture's key: its movement was written with the claim.
            SELECT 1 FROM ${tables.movements} m
            WHERE m.merchant_id = k.merchant_id AND m.id = k.charge_id
          ) THEN 'reserved' ELSE 'started' END,
        attempts = 0, sweeps = 0, lock_token = NULL, locked_until = NULL, updated_at = now(),
        last_error = 'requeued; was parked: ' || coalesce(k.last_error, 'no reason recorded')
      WHERE k.merchant_id = ${scoped.merchantId}
        AND k.operation = ${scoped.operation}
        AND k.key = ${scoped.key}
        AND k.recovery_point = 'failed'
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM requeued) AS requeued`);
}
