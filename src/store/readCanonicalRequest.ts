import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * The canonical request stored under a key, or null if the key is gone. Read only to explain a
 * 422: the hot path never needs it.
 */
export async function readCanonicalRequest(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<string | null> {
  const row = await db.maybeOne(sql.type(z.object({ canonical_request: z.string() }))`
    SELECT request AS canonical_request FROM ${tables.keys}
    WHERE merchant_id = ${scoped.merchantId}
      AND operation = ${scoped.operation}
      AND key = ${scoped.key}`);
  return row?.canonical_request ?? null;
}
