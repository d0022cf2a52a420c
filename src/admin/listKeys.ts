import type { EngineEnv } from '../engine/engineEnv.js';
import { RECOVERY_POINTS, type RecoveryPoint } from '../store/keyState.js';
import { listKeysPage, type KeyPosition } from '../store/listKeysPage.js';
import { withStore } from '../store/storeErrors.js';
import { checkOperation, inputIssues } from './adminInput.js';
import {
  decodeCursor,
  differingFilters,
  encodeCursor,
  type DecodedCursor,
  type ListFilters,
} from './listCursor.js';
import type { KeyPage, ListKeysOptions } from './types.js';

/** The most keys one page holds. */
export const MAX_PAGE_SIZE = 1_000;

/**
 * One page of keys, oldest first (by when each was claimed, then merchant, operation and key):
 * `engine.list`. Keyset pagination: each page starts after the last key of the one before, so
 * a deep page costs what the first does. A cursor carries the filters it was taken under and is
 * refused under others: it would start the other listing at a key of this one, past keys of the
 * other that no page of it had listed.
 *
 * @throws {InvalidRequestError} a bad filter, limit or cursor, or a cursor of a listing with other
 * filters; nothing read.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function listKeys(env: EngineEnv, options: ListKeysOptions): Promise<KeyPage> {
  const { filters, after, limit } = readListOptions(options);
  const pool = await env.pool();
  // One more than asked: whether it comes says whether there is a next page.
  const rows = await withStore(() =>
    listKeysPage(pool, env.tables, { ...filters, after, limit: limit + 1 }),
  );
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    keys: page.map(({ position: _position, ...summary }) => summary),
    // It carries the filters, so that it is refused under others.
    nextCursor: rows.length > limit && last ? encodeCursor(last.position, filters) : null,
  };
}

function readListOptions(options: ListKeysOptions) {
  const issues = inputIssues();
  const o = (typeof options === 'object' && options !== null ? options : {}) as Record<
    string,
    unknown
  >;
  issues.onlyKnown(o, LIST_FIELDS);
  const { limit, point, merchantId, operation, olderThan, cursor } = o;
  if (!(Number.isInteger(limit) && (limit as number) >= 1 && (limit as number) <= MAX_PAGE_SIZE)) {
    issues.add('limit', `must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  }
  if (point !== undefined && !(RECOVERY_POINTS as readonly unknown[]).includes(point)) {
    issues.add('point', `must be one of ${RECOVERY_POINTS.join(', ')}`);
  }
  if (merchantId !== undefined) issues.id('merchantId', merchantId, true);
  if (operation !== undefined) checkOperation(issues, operation);
  if (
    olderThan !== undefined &&
    !(typeof olderThan === 'number' && Number.isSafeInteger(olderThan) && olderThan >= 0)
  ) {
    issues.add('olderThan', 'must be a non-negative integer of milliseconds');
  }
  const filters: ListFilters = {
    point: (point as RecoveryPoint | undefined) ?? null,
    merchantId: (merchantId as string | undefined) ?? null,
    operation: (operation as string | undefined) ?? null,
    olderThanMs: (olderThan as number | undefined) ?? null,
  };
  let after: KeyPosition | null = null;
  if (cursor !== undefined && cursor !== null) {
    const decoded: DecodedCursor =
      typeof cursor === 'string' ? decodeCursor(cursor) : { kind: 'invalid' };
    if (decoded.kind === 'current') {
      after = decoded.after;
      // Compared only once the filters themselves are good: a bad one is the issue to name.
      const filtersGood = !issues.issues.some((issue) => FILTER_FIELDS.has(issue.field));
      const differing = filtersGood ? differingFilters(decoded.filters, filters) : [];
      if (differing.length > 0) {
        issues.add(
          'cursor',
          `belongs to a listing with other filters (${differing.join(', ')}): pass it with ` +
            'the filters of the listing that gave it, or start again without a cursor',
        );
      }
    } else if (decoded.kind === 'unbound') {
      issues.add(
        'cursor',
        'is from an older chargeonce, which did not record the filters it was taken under: ' +
          'start the listing again without a cursor',
      );
    } else {
      issues.add('cursor', 'is not a cursor from list: pass nextCursor as it came');
    }
  }
  issues.done();
  return { filters, after, limit: limit as number };
}

/** The options that choose a listing's keys, as `list` names them. */
const FILTER_FIELDS = new Set(['point', 'merchantId', 'operation', 'olderThan']);

/** Every option `list` takes. */
const LIST_FIELDS: ReadonlySet<string> = new Set([...FILTER_FIELDS, 'limit', 'cursor']);
