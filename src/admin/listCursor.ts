import { RECOVERY_POINTS, type RecoveryPoint } from '../store/keyState.js';
import type { KeyPosition } from '../store/listKeysPage.js';

/** `YYYY-MM-DDTHH:MM:SS.ffffff`, as the listing reads `created_at` in UTC. */
const EXACT_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

/** The form of cursor this code makes: the first value of its array. */
const CURSOR_VERSION = 2;

/** Bits of a cursor's scope: which of the position's own values were also filters. */
const BY_MERCHANT = 1;
const BY_OPERATION = 2;

/** The filters that choose a listing's keys: a cursor is only good under the ones it came from. */
export type ListFilters = {
  point: RecoveryPoint | null;
  merchantId: string | null;
  operation: string | null;
  olderThanMs: number | null;
};

/** What a cursor says, read back. */
export type DecodedCursor =
  /** One this code made: the page starts after `after`, in the listing chosen by `filters`. */
  | { kind: 'current'; after: KeyPosition; filters: ListFilters }
  /**
   * A well-formed cursor of the first form, which named a position only: which filters it was
   * taken under cannot be told.
   */
  | { kind: 'unbound' }
  /** Not a cursor (garbage, tampered with, or not from `list`). */
  | { kind: 'invalid' };

/**
 * The cursor of the page after `position`, in the listing chosen by `filters`: base64url JSON of
 * `[2, createdAt, merchantId, operation, key, point, olderThanMs, scope]`. Opaque to callers (its
 * form may change); it names a position, not a snapshot, so it stays valid however long it is
 * kept, but only under the filters it was taken with.
 *
 * The merchant and operation filters are not repeated: `position` is a key of the listing, so
 * when either filter is set the key's own value is that filter (PostgreSQL compares text by its
 * bytes). `scope` only says which of the two were filters, so a cursor grows by a few characters.
 */
export function encodeCursor(position: KeyPosition, filters: ListFilters): string {
  const scope =
    (filters.merchantId !== null ? BY_MERCHANT : 0) |
    (filters.operation !== null ? BY_OPERATION : 0);
  const values = [
    CURSOR_VERSION,
    position.createdAt,
    position.merchantId,
    position.operation,
    position.key,
    filters.point,
    filters.olderThanMs,
    scope,
  ];
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

/** What `cursor` says; `invalid` when it is not one this code made, of either form. */
export function decodeCursor(cursor: string): DecodedCursor {
  const invalid = { kind: 'invalid' } as const;
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return invalid;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return invalid;
  }
  if (!Array.isArray(values)) return invalid;
  // The first form: [createdAt, merchantId, operation, key], no version, no filters.
  if (values.length === 4) return readPosition(values) ? { kind: 'unbound' } : invalid;
  if (values.length !== 8 || values[0] !== CURSOR_VERSION) return invalid;
  const after = readPosition(values.slice(1, 5));
  const [point, olderThanMs, scope] = values.slice(5) as unknown[];
  if (!after) return invalid;
  if (point !== null && !(RECOVERY_POINTS as readonly unknown[]).includes(point)) return invalid;
  if (
    olderThanMs !== null &&
    !(typeof olderThanMs === 'number' && Number.isSafeInteger(olderThanMs) && olderThanMs >= 0)
  ) {
    return invalid;
  }
  if (!(Number.isInteger(scope) && (scope as number) >= 0 && (scope as number) <= 3)) {
    return invalid;
  }
  return {
    kind: 'current',
    after,
    filters: {
      point: point as RecoveryPoint | null,
      merchantId: (scope as number) & BY_MERCHANT ? after.merchantId : null,
      operation: (scope as number) & BY_OPERATION ? after.operation : null,
      olderThanMs,
    },
  };
}

/**
 * The filters of `given` that differ from the ones the cursor was taken under, by the name
 * `list` takes them (`point`, `merchantId`, `operation`, `olderThan`); empty when they match.
 */
export function differingFilters(taken: ListFilters, given: ListFilters): string[] {
  const differing: string[] = [];
  if (taken.point !== given.point) differing.push('point');
  if (taken.merchantId !== given.merchantId) differing.push('merchantId');
  if (taken.operation !== given.operation) differing.push('operation');
  if (taken.olderThanMs !== given.olderThanMs) differing.push('olderThan');
  return differing;
}

function readPosition(values: unknown[]): KeyPosition | null {
  if (!values.every((value): value is string => typeof value === 'string')) return null;
  const [createdAt, merchantId, operation, key] = values as [string, string, string, string];
  if (!EXACT_TIMESTAMP.test(createdAt)) return null;
  return { createdAt, merchantId, operation, key };
}
