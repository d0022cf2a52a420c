import { z } from 'zod';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import type { CompletionInput } from './completeKey.js';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * The UPDATE that completes a parked key with its response (for a `done` CTE), fenced by the
 * lock token `takeParkedKey` set: only while the key is in `failed` under that token. Returns the
 * key's merchant and guarded id.
 */
export function completeParkedUpdate(
  tables: Tables,
  input: ScopedKey & { lockToken: string; responseStatus: number; responseBody: string },
): FragmentSqlToken {
  return sql.fragment`
    UPDATE ${tables.keys}
    SET recovery_point = 'completed', response_status = ${input.responseStatus},
      response_body = ${input.responseBody}, lock_token = NULL, locked_until = NULL,
      completed_at = now(), updated_at = now()
    WHERE merchant_id = ${input.merchantId}
      AND operation = ${input.operation}
      AND key = ${input.key}
      AND lock_token = ${input.lockToken}::uuid
      AND recovery_point = 'failed'
    RETURNING merchant_id, charge_id`;
}

/**
 * The completion of a parked key a person resolved: records the outcome on the charge, stores
 * the response, moves the key from `failed` to `completed` and releases it, in one statement
 * fenced by the lock token `takeParkedKey` set. The same writes as the engine's own completion
 * (`hotStatements`), which only finishes unfinished keys; this one is never on a charge's path.
 * Returns false (nothing written) when the key is not parked under that token.
 */
export async function completeParkedKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ completed: z.boolean() }))`
    WITH done AS (${completeParkedUpdate(tables, input)}), recorded AS (
      UPDATE ${tables.charges} c
      SET status = ${input.chargeStatus}, provider_charge_id = ${input.providerChargeId},
        decline_code = ${input.declineCode}, updated_at = now()
      FROM done
      WHERE c.merchant_id = done.merchant_id AND c.id = done.charge_id
      RETURNING c.id
    )
    SELECT EXISTS (SELECT 1 FROM done) AS completed`);
}
