import type { EngineEnv } from '../engine/engineEnv.js';
import { RECOVERY_POINTS, type RecoveryPoint } from '../store/keyState.js';
import { listKeysPage, type KeyPosition } from '../store/listKeysPage.js';
import { withStore } from '../store/storeErrors.js';
import { checkOperation, inputIssues, MAX_TEXT } from './adminInput.js';
import { decodeCursor, encodeCursor } from './listCursor.js';
import type { KeyPage, ListKeysOptions } from './types.js';

/** The most keys one page holds. */
export const MAX_PAGE_SIZE = 1_000;

/**
 * One page of keys, oldest first (by when each was claimed, then merchant, operation and key):
 * `engine.list`. Keyset pagination: each page starts after the last key of the one before, so
 * a deep page costs what the first does.
 *
 * @throws {InvalidRequestError} a bad filter, limit or cursor; nothing read.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function listKeys(env: EngineEnv, options: ListKeysOptions): Promise<KeyPage> {
  const filter = readListOptions(options);
  const pool = await env.pool();
  // One more than asked: whether it comes says whether there is a next page.
  const rows = await withStore(() =>
    listKeysPage(pool, env.tables, { ...filter, limit: filter.limit + 1 }),
  );
  const page = rows.slice(0, filter.limit);
  const last = page.at(-1);
  return {
    keys: page.map(({ position: _position, ...summary }) => summary),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.position) : null,
  };
}

function readListOptions(options: ListKeysOptions) {
  const issues = inputIssues();
  const o = (typeof options === 'object' && options !== null ? options : {}) as Record<
    string,
    unknown
  >;
  const { limit, point, merchantId, operation, olderThan, cursor } = o;
  if (!(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_PAGE_SIZE)) {
    issues.add('limit', `must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (point !== undefined && !(RECOVERY_POINTS as readonly unknown[]).includes(point)) {
    issues.add('point', `must be one of ${RECOVERY_POINTS.join(', ')}`);
  }
  if (merchantId !== undefined) issues.text('merchantId', merchantId, MAX_TEXT.id, true);
  if (operation !== undefined) checkOperation(issues, operation);
  if (
    olderThan !== undefined &&
    !(typeof olderThan === 'number' && Number.isSafeInteger(olderThan) && olderThan >= 0)
  ) {
    issues.add('olderThan', 'must be a non-negative integer of milliseconds');
  }
  let after: KeyPosition | null = null;
  if (cursor !== undefined && cursor !== null) {
    after = typeof cursor === 'string' ? decodeCursor(cursor) : null;
    if (!after) issues.add('cursor', 'is not a cursor from list: pass nextCursor as it came');
  }
  issues.done();
  return {
    point: (point as RecoveryPoint | undefined) ?? null,
    merchantId: (merchantId as string | undefined) ?? null,
    operation: (operation as string | undefined) ?? null,
    olderThanMs: (olderThan as number | undefined) ?? null,
    after,
    limit: limit as number,
  };
}
