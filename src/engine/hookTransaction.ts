import type { DatabaseTransactionConnection } from 'slonik';
import { isSlonikToken, rawQuery, slonikTextQuery } from '../store/rawQuery.js';
import { InvalidConfigurationError } from '../errors.js';
import { markHookError } from '../store/hookErrors.js';

/**
 * What a hook's statement returns: the rows and how many. Values come as chargeonce's SQL layer
 * (slonik) parses them: `bigint` as a JavaScript BigInt, `numeric` as a number, timestamps as
 * milliseconds since the epoch, the rest as node-postgres does.
 */
export type HookQueryResult = { rows: Record<string, unknown>[]; rowCount: number };

/**
 * A statement for {@link HookTransaction.query}: SQL text with PostgreSQL's `$1…` placeholders and
 * its values, under the names the libraries give them:
 * - `{ sql, values }`: a slonik `sql` token;
 * - `{ text, values }`: a node-postgres query config (or sql-template-strings' output);
 * - `{ sql, bindings }`: Knex's `toSQL().toNative()` (not `toSQL()` alone: its placeholders are `?`);
 * - `{ sql, params }`: Drizzle's `toSQL()`.
 * An object with none of these texts, with values that are not an array, with values under two
 * of these names, or with node-postgres's `rowMode` or `types` (rows come as objects, values as
 * {@link HookQueryResult} says) is refused with `InvalidConfigurationError` before anything is
 * sent.
 */
export type HookStatement =
  | { sql: string; values?: readonly unknown[] }
  | { text: string; values?: readonly unknown[] }
  | { sql: string; bindings: readonly unknown[] }
  | { sql: string; params: readonly unknown[] }
  | { sql: string; parameters: readonly unknown[] };

/**
 * The phase transaction a hook runs in, driver-neutral: whatever SQL library you use, send its
 * statements here and they commit with the phase or not at all. Placeholders are PostgreSQL's
 * own (`$1`, `$2`, …).
 */
export type HookTransaction = {
  query(text: string, values?: readonly unknown[]): Promise<HookQueryResult>;
  query(statement: HookStatement): Promise<HookQueryResult>;
};

/** Where the values of a statement object may be, by library (see {@link HookStatement}). */
const VALUE_FIELDS = ['values', 'bindings', 'params', 'parameters'] as const;

const SHAPES =
  'SQL text and an array of values, or an object with `sql` or `text` and its values in `values`, `bindings`, `params` or `parameters`';

function refuse(what: string): never {
  throw new InvalidConfigurationError(`A hook query takes ${SHAPES}: ${what}`, {
    cause: new TypeError(what),
  });
}

function valuesOf(statement: object): readonly unknown[] {
  const given = VALUE_FIELDS.filter(
    (field) => (statement as Record<string, unknown>)[field] !== undefined,
  );
  if (given.length > 1) refuse(`this statement has values in both \`${given.join('` and `')}\``);
  const field = given[0];
  if (field === undefined) return [];
  const values = (statement as Record<string, unknown>)[field];
  if (!Array.isArray(values)) refuse(`its \`${field}\` is ${describe(values)}, not an array`);
  return values;
}

/** What a value is, for a message: never a string's text (it may be SQL with a secret in it). */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function toToken(statement: unknown, values: unknown) {
  if (typeof statement === 'string') {
    if (values === undefined) return rawQuery(statement, []);
    if (!Array.isArray(values)) refuse(`its values are ${describe(values)}, not an array`);
    return rawQuery(statement, values);
  }
  if (typeof statement !== 'object' || statement === null) {
    refuse(`it was given ${describe(statement)}`);
  }
  if (values !== undefined) {
    refuse('a statement object carries its own values; a second argument would be ignored');
  }
  if (typeof (statement as { toNative?: unknown }).toNative === 'function') {
    refuse("this is Knex's `toSQL()`, whose placeholders are `?`: pass `toSQL().toNative()`");
  }
  // `text` first: an object with both (sql-template-strings') has PostgreSQL's `$1` placeholders
  // in `text`, MySQL's `?` in `sql`.
  const text =
    'text' in statement ? statement.text : 'sql' in statement ? statement.sql : undefined;
  if (typeof text !== 'string') {
    refuse(
      'sql' in statement || 'text' in statement
        ? `its \`${'sql' in statement ? 'sql' : 'text'}\` is ${describe(text)}, not a string`
        : 'this object has neither `sql` nor `text`',
    );
  }
  refuseResultShapes(statement);
  return (isSlonikToken(statement) ? slonikTextQuery : rawQuery)(text, valuesOf(statement));
}

/**
 * node-postgres's options that change what comes back: they would be ignored here (slonik runs
 * the statement and parses its rows), so the hook would read rows it did not ask for.
 */
function refuseResultShapes(statement: object): void {
  const { rowMode, types } = statement as { rowMode?: unknown; types?: unknown };
  if (rowMode !== undefined) {
    refuse('`rowMode` is not supported: rows come as objects keyed by column name');
  }
  if (types !== undefined) {
    refuse(
      '`types` is not supported: values come parsed as chargeonce parses them (see HookQueryResult)',
    );
  }
}

/** Wraps the phase's slonik transaction for a hook. */
export function hookTransaction(tx: DatabaseTransactionConnection): HookTransaction {
  return {
    query: async (statement: string | HookStatement, values?: readonly unknown[]) => {
      const result = await tx.query(toToken(statement, values)).catch((error: unknown) => {
        throw markHookError(error);
      });
      const rows = result.rows as readonly Record<string, unknown>[];
      return { rows: [...rows], rowCount: result.rowCount };
    },
  };
}
