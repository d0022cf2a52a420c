import { describe, expect, it } from 'vitest';
import { splitSqlStatements } from '../../src/store/splitSqlStatements.js';

/** Comments may leave whitespace behind; only the statements' tokens matter. */
function split(text: string): string[] {
  return splitSqlStatements(text).map((statement) => statement.replace(/\s+/g, ' '));
}

describe('splitSqlStatements', () => {
  it('splits on semicolons, trims, and drops empty statements', () => {
    expect(split('SELECT 1;\n\n  SELECT 2 ;;\n;SELECT 3')).toEqual([
      'SELECT 1',
      'SELECT 2',
      'SELECT 3',
    ]);
  });

  it('returns nothing for a file of comments and whitespace', () => {
    expect(split('-- only a comment; really\n/* and; another */\n')).toEqual([]);
  });

  it('ignores semicolons in line comments', () => {
    expect(split('SELECT 1; -- first; not a statement\nSELECT 2; -- trailing;')).toEqual([
      'SELECT 1',
      'SELECT 2',
    ]);
  });

  it('ignores semicolons in block comments, even across lines', () => {
    expect(split('SELECT /* a;\n b; */ 1;\nSELECT 2')).toEqual(['SELECT 1', 'SELECT 2']);
  });

  it('keeps semicolons and comment markers inside quoted strings and identifiers', () => {
    expect(
      split(`INSERT INTO "odd;name" VALUES ('a;b', 'it''s; -- fine', '/* no */');SELECT 2`),
    ).toEqual([`INSERT INTO "odd;name" VALUES ('a;b', 'it''s; -- fine', '/* no */')`, 'SELECT 2']);
  });

  it('keeps doubled quotes inside quoted identifiers', () => {
    expect(split('SELECT 1 AS "a"";b";SELECT 2')).toEqual(['SELECT 1 AS "a"";b"', 'SELECT 2']);
  });

  it('keeps a dollar-quoted body with semicolons whole', () => {
    const fn = `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1; -- inside
  RAISE NOTICE 'x;y';
END;
$$`;
    expect(splitSqlStatements(`${fn};\nSELECT f();`)).toEqual([fn, 'SELECT f()']);
  });

  it('matches a tagged dollar quote only with the same tag', () => {
    const body = `DO $body$ BEGIN PERFORM $$ not; the end $$; END; $body$`;
    expect(splitSqlStatements(`${body};SELECT 2`)).toEqual([body, 'SELECT 2']);
  });

  it('does not take positional parameters for dollar quotes', () => {
    expect(split('SELECT $1, $2; SELECT 3')).toEqual(['SELECT $1, $2', 'SELECT 3']);
  });
});
