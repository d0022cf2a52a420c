import type { CommonQueryMethods } from 'slonik';
import { rawQuery } from './rawQuery.js';
import type { ChargeStatus, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import { hotStatements } from './hotStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';
import { queryPrepared } from './hotQuery.js';

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
 * The completion's `completed` column; no row at all is a completion fenced out (the single
 * statement returns a row only for a key it completed).
 */
export function completedOf(row: Record<string, unknown> | undefined): boolean {
  if (row === undefined) return false;
  const completed = row.completed;
  if (typeof completed !== 'boolean')
    throw new Error('chargeonce: the completion returned no flag');
  return completed;
}

/**
 * Records the outcome on the charge, stores the response, moves the key to `completed` and
 * releases the lease, in one statement (see `hotStatements`) fenced by the lock
 * token. Returns false when the lease was lost to another attempt: a zombie writes nothing.
 */
export async function completeKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  const result = await db.query(
    rawQuery(hotStatements(tables).complete.text, completionValues(input)),
  );
  return completedOf(result.rows[0] as Record<string, unknown> | undefined);
}

/** The completion's values, in the order of the statement's parameters. */
export function completionValues(input: CompletionInput): unknown[] {
  return [
    input.merchantId,
    input.operation,
    input.key,
    input.lockToken,
    input.chargeStatus,
    input.providerChargeId,
    input.declineCode,
    input.responseStatus,
    input.responseBody,
  ];
}

/**
 * {@link completeKey} as a named prepared statement on a node-postgres pool: the hot path of a
 * completion without a `complete` hook.
 */
export function completeKeyPrepared(
  pool: PgPoolLike,
  tables: Tables,
  input: CompletionInput,
): Promise<boolean> {
  return queryPrepared(pool, hotStatements(tables).complete, completionValues(input)).then((rows) =>
    completedOf(rows[0]),
  );
}
