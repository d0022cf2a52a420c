import { sql, type CommonQueryMethods } from 'slonik';
import { keyStateColumns, keyStateFrom, keyStateRow, toKeyState } from './keyState.js';
import type { KeyState, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** Reads a key's state, or null if no such key. */
export async function findKey(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<KeyState | null> {
  const row = await db.maybeOne(
    sql.type(keyStateRow)`SELECT ${keyStateColumns} FROM ${keyStateFrom(tables, scoped)}`,
  );
  return row ? toKeyState(row) : null;
}
