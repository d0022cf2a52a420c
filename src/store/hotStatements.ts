import { createHash } from 'node:crypto';
import type { Tables } from './tables.js';

/** A statement node-postgres prepares once per connection under `name`. */
export type PreparedStatement = { name: string; text: string };

/** The two statements of a fresh charge, for one schema. */
export type HotStatements = { claim: PreparedStatement; complete: PreparedStatement };

function prepared(text: string): PreparedStatement {
  // Named after the text itself: a name stands for one text on every connection, whatever the
  // schema, and stays under PostgreSQL's 63-byte limit.
  return {
    name: `chargeonce_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`,
    text,
  };
}

const cache = new Map<string, HotStatements>();

/**
 * The hot statements as text, sent straight to node-postgres with `name` set: PostgreSQL parses
 * and plans each once per connection, and each call is one Bind/Execute round trip. The schema
 * name was checked by `tablesIn` (a plain lower-case identifier), so quoting it is enough.
 */
export function hotStatements(tables: Tables): HotStatements {
  const cached = cache.get(tables.schema);
  if (cached) return cached;
  const schema = `"${tables.schema}"`;
  const statements = {
    claim: prepared(
      `SELECT * FROM ${schema}.claim_key($1::text, $2::text, $3::text, $4::text, $5::text,
        $6::boolean, $7::uuid, $8::uuid, $9::float8, $10::text, $11::bigint, $12::text,
        $13::text, $14::jsonb, $15::text)`,
    ),
    complete: prepared(
      `SELECT ${schema}.complete_key($1::text, $2::text, $3::text, $4::uuid, $5::text, $6::text,
        $7::text, $8::integer, $9::text) AS completed`,
    ),
  };
  cache.set(tables.schema, statements);
  return statements;
}
