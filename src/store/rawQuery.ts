import type { QuerySqlToken } from 'slonik';

/** The mark slonik puts on a query token: the same symbol across slonik versions. */
const QUERY_TOKEN = Symbol.for('SLONIK_TOKEN_QUERY');

/**
 * A slonik query token from SQL text with `$1…` placeholders and its values: for statements
 * written as plain text (the hot statements, a hook's SQL) that must also run through slonik.
 */
export function rawQuery(text: string, values: readonly unknown[]): QuerySqlToken {
  // slonik 47 writes its own placeholders as `$slonik_1` and turns them into `$1` when it sends;
  // plain `$1` passes through unchanged.
  return { type: QUERY_TOKEN, sql: text, values, parser: undefined } as unknown as QuerySqlToken;
}
