import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ChargeStatus, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import { hotStatements } from './hotStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';

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

/**
 * {@link completeKey} as a named prepared statement on a node-postgres pool: the hot path of a
 * completion without a `complete` hook.
 */
export async function completeKeyPrepared(
  pool: PgPoolLike,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  const { complete } = hotStatements(tables);
  const result = await pool.query({
    ...complete,
    values: [
      input.merchantId,
      input.operation,
      input.key,
      input.lockToken,
      input.chargeStatus,
      input.providerChargeId,
      input.declineCode,
      input.responseStatus,
      input.responseBody,
    ],
  });
  return completedRow.parse(result.rows[0]).completed;
}
