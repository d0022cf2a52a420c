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

const completedRow = z.object({ completed: z.boolean() });

/**
 * Records the outcome on the charge, stores the response, moves the key to `completed` and
 * releases the lease, in one statement (`complete_key`, see the migration) fenced by the lock
 * token. Returns false when the lease was lost to another attempt: a zombie writes nothing.
 */
export async function completeKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  return db.oneFirst(sql.type(completedRow)`
    SELECT ${tables.completeKeyFunction}(
      ${input.merchantId}::text, ${input.operation}::text, ${input.key}::text,
      ${input.lockToken}::uuid, ${input.chargeStatus}::text, ${input.providerChargeId}::text,
      ${input.declineCode}::text, ${input.responseStatus}::integer,
      ${input.responseBody}::text) AS completed`);
}
