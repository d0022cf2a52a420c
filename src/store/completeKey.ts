import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ChargeStatus, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** The terminal outcome written by the complete phase. */
export type CompletionInput = ScopedKey & {
  lockToken: string;
  chargeStatus: Exclude<ChargeStatus, 'reserved'>;
  providerChargeId: string | null;
  declineCode: string | null;
  responseStatus: number;
  responseBody: string;
};

/**
 * Records the outcome on the charge, stores the response, moves the key to `completed` and
 * releases the lease, in one statement fenced by the lock token. Returns false when the lease was
 * lost to another attempt: a zombie writes nothing.
 */
export async function completeKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ completed: z.boolean() }))`
    WITH done AS (
      UPDATE ${tables.keys}
      SET recovery_point = 'completed',
          response_status = ${input.responseStatus},
          response_body = ${input.responseBody},
          lock_token = NULL,
          locked_until = NULL,
          completed_at = now(),
          updated_at = now()
      WHERE merchant_id = ${input.merchantId}
        AND operation = ${input.operation}
        AND key = ${input.key}
        AND lock_token = ${input.lockToken}::uuid
        AND recovery_point IN ('started', 'reserved')
      RETURNING merchant_id, charge_id
    ), charged AS (
      UPDATE ${tables.charges} c
      SET status = ${input.chargeStatus},
          provider_charge_id = ${input.providerChargeId},
          decline_code = ${input.declineCode},
          updated_at = now()
      FROM done
      WHERE c.merchant_id = done.merchant_id AND c.id = done.charge_id
      RETURNING c.id
    )
    SELECT EXISTS (SELECT 1 FROM done) AS completed
  `);
}
