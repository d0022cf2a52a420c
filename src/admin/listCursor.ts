import type { KeyPosition } from '../store/listKeysPage.js';

/** `YYYY-MM-DDTHH:MM:SS.ffffff`, as the listing reads `created_at` in UTC. */
const EXACT_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

/**
 * The cursor of the page after `position`: the last key's sort values as base64url JSON. Opaque
 * to callers (its form may change); it names a position, not a snapshot, so it stays valid
 * however long it is kept.
 */
export function encodeCursor(position: KeyPosition): string {
  const values = [position.createdAt, position.merchantId, position.operation, position.key];
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

/** The position a cursor names, or null when it is not one this code made. */
export function decodeCursor(cursor: string): KeyPosition | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(values) || values.length !== 4) return null;
  if (!values.every((value): value is string => typeof value === 'string')) return null;
  const [createdAt, merchantId, operation, key] = values as [string, string, string, string];
  if (!EXACT_TIMESTAMP.test(createdAt)) return null;
  return { createdAt, merchantId, operation, key };
}
