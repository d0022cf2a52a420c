/**
 * A template array holding one trusted piece of SQL (a migration's statement, a CTE built from
 * constants), for `sql.unsafe` or `sql.fragment`: never anything a caller supplied.
 */
export function rawSql(text: string): TemplateStringsArray {
  // slonik checks for a frozen `raw`, as a real template literal has.
  return Object.freeze(Object.assign([text], { raw: Object.freeze([text]) }));
}
