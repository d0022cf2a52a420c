import type { DatabaseTransactionConnection } from 'slonik';
import { rawQuery } from '../store/rawQuery.js';
import { InvalidConfigurationError } from '../errors.js';

/**
 * What a hook's statement returns: the rows and how many. Values come as chargeonce's SQL layer
 * (slonik) parses them: `bigint` as a JavaScript BigInt, `numeric` as a number, timestamps as
 * milliseconds since the epoch, the rest as node-postgres does.
 */
export type HookQueryResult = { rows: Record<string, unknown>[]; rowCount: number };

/**
 * A statement for {@link HookTransaction.query}: a slonik `sql` token (`{ sql, values }`), a
 * node-postgres query config (`{ text, values }`), or anything else of either shape (the output
 * of sql-template-strings, Knex's `toSQL().toNative()`, Drizzle's `toSQL()` with `sql` and `params`
 * renamed, …).
 */
export type HookStatement =
  { sql: string; values?: readonly unknown[] } | { text: string; values?: readonly unknown[] };

/**
 * The phase transaction a hook runs in, driver-neutral: whatever SQL library you use, send its
 * statements here and they commit with the phase or not at all. Placeholders are PostgreSQL's
 * own (`$1`, `$2`, …).
 */
export type HookTransaction = {
  query(text: string, values?: readonly unknown[]): Promise<HookQueryResult>;
  query(statement: HookStatement): Promise<HookQueryResult>;
};

function toToken(statement: string | HookStatement, values: readonly unknown[] = []) {
  if (typeof statement === 'string') return rawQuery(statement, values);
  if (typeof statement === 'object' && statement !== null) {
    const text = 'sql' in statement ? statement.sql : statement.text;
    if (typeof text === 'string') return rawQuery(text, statement.values ?? []);
  }
  throw new InvalidConfigurationError(
    'A hook query takes SQL text with values, or an object with `sql` or `text` and `values`',
  );
}

/** Wraps the phase's slonik transaction for a hook. */
export function hookTransaction(tx: DatabaseTransactionConnection): HookTransaction {
  return {
    query: async (statement: string | HookStatement, values?: readonly unknown[]) => {
      const result = await tx.query(toToken(statement, values));
      const rows = result.rows as readonly Record<string, unknown>[];
      return { rows: [...rows], rowCount: result.rowCount };
    },
  };
}
