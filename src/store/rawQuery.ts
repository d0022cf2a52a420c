import type { FragmentSqlToken, QuerySqlToken } from 'slonik';

/** The mark slonik puts on a query token: the same symbol across slonik versions. */
const QUERY_TOKEN = Symbol.for('SLONIK_TOKEN_QUERY');

/**
 * A slonik query token from SQL text with `$1…` placeholders and its values: for statements
 * written as plain text (the hot statements, a hook's SQL) that must also run through slonik.
 */
export function rawQuery(text: string, values: readonly unknown[]): QuerySqlToken {
  // slonik 47 writes its own placeholders as `$slonik_1` and turns them into `$1` when it sends,
  // by replacing every `$slonik_` with `$`, in string literals too; plain `$1` passes through
  // unchanged. So each `$slonik_` of the text is sent as `$slonik_slonik_`, which that
  // replacement turns back into `$slonik_` (a hook's SQL may hold it in a literal).
  const sql = text.includes(SLONIK_MARK) ? text.replaceAll(SLONIK_MARK, SLONIK_MARK_KEPT) : text;
  return slonikTextQuery(sql, values);
}

const SLONIK_MARK = '$slonik_';
const SLONIK_MARK_KEPT = '$slonik_slonik_';

/**
 * A query token from the SQL text of a slonik token (`sql` of a `sql\`…\`` or `sql.fragment`),
 * whose `$slonik_1` placeholders are slonik's own: sent as they are.
 */
export function slonikTextQuery(text: string, values: readonly unknown[]): QuerySqlToken {
  return { type: QUERY_TOKEN, sql: text, values, parser: undefined } as unknown as QuerySqlToken;
}

/** True for one of slonik's tokens (its `type` is one of slonik's symbols, in any version). */
export function isSlonikToken(value: object): boolean {
  const { type } = value as { type?: unknown };
  return typeof type === 'symbol' && (type.description ?? '').startsWith('SLONIK_TOKEN_');
}

/** The mark slonik puts on a fragment token. */
const FRAGMENT_TOKEN = Symbol.for('SLONIK_TOKEN_FRAGMENT');

/** A slonik fragment of constant SQL text, with no placeholders (text shared with plain SQL). */
export function constantFragment(text: string): FragmentSqlToken {
  return { type: FRAGMENT_TOKEN, sql: text, values: [] } as unknown as FragmentSqlToken;
}
