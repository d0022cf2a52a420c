import type { DatabaseTransactionConnection } from 'slonik';
import { findKey } from '../store/findKey.js';
import type { ScopedKey } from '../store/keyState.js';
import type { Tables } from '../store/tables.js';
import { KeyNotResolvableError } from './KeyNotResolvableError.js';

/** Why a resolve could not take the key: where it is now. */
export async function notResolvable(
  tx: DatabaseTransactionConnection,
  tables: Tables,
  scoped: ScopedKey,
): Promise<KeyNotResolvableError> {
  const state = await findKey(tx, tables, scoped);
  if (!state) return new KeyNotResolvableError('no_such_key', null);
  const point = state.recoveryPoint;
  if (point === 'completed' || point === 'expired') {
    return new KeyNotResolvableError('completed', point);
  }
  return new KeyNotResolvableError('not_parked', point);
}
