import { sql, type CommonQueryMethods } from 'slonik';
import { keyStateColumns, keyStateFrom, readKeyState } from './keyState.js';
import type { KeyState, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** Reads a key's state, or null if no such key. */
export async function findKey(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<KeyState | null> {
  const result = await db.query(
    sql.unsafe`SELECT ${keyStateColumns} FROM ${keyStateFrom(tables, scoped)}`,
  );
  const row = result.rows[0] as Record<string, unknown> | undefined;
  return row ? readKeyState(row) : null;
}
