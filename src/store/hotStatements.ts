import { createHash } from 'node:crypto';
import type { Tables } from './tables.js';
import { KEY_LOCK_WAIT_CTE } from './keyLockWait.js';

/**
 * Whether another attempt's lease still holds the key `k`, and for how long, by PostgreSQL's
 * clock: the columns every claim returns for an existing key.
 */
export const LEASE_COLUMNS = `(k.lock_token IS NOT NULL AND k.locked_until > now()) AS lease_held,
  GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::int4
    AS lease_remaining_ms`;

/**
 * The charge of a key, for a claim to resume, refuse or replay it with: a subquery over the key
 * row `k`, in `charges`, by the charge's primary key. `OFFSET 0` keeps the subquery from being
 * merged into the claim's join: merged, a cached plan could find the charge by merchant alone
 * (the claim's parameter, through the key row) and filter all of the merchant's charges by id.
 */
export function chargeOfKey(k: string, charges: string): string {
  return `SELECT c.status, c.provider_key, c.provider_charge_id
    FROM ${charges} c
    WHERE c.merchant_id = ${k}.merchant_id AND c.id = ${k}.charge_id
    OFFSET 0`;
}

/** A statement node-postgres prepares once per connection under `name`. */
export type PreparedStatement = { name: string; text: string };

/** The two statements of a fresh charge, for one schema. */
export type HotStatements = { claim: PreparedStatement; complete: PreparedStatement };

/** A statement named after its text. */
export function prepared(text: string): PreparedStatement {
  // Named after the text itself: a name stands for one text on every connection, whatever the
  // schema, and stays under PostgreSQL's 63-byte limit.
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 24);
  return { name: `chargeonce_${digest}`, text };
}

/**
 * The claim: reads the key first, so a replay, a 409 or a 422 is one index read and no insert;
 * only when there is none does it insert the key (ON CONFLICT DO NOTHING: the primary key is the
 * lock, and of any number of racing claims exactly one inserts) and, with `$6` (reserve), the
 * charge intent, all in one statement, one round trip and one commit. Returns one row: `claimed`,
 * and the existing key's state when there was one, with its stored canonical request only when
 * the fingerprints differ (to explain a 422). A claim that lost a race to a key committed after
 * this statement's snapshot gets `claimed = false` and no state: the caller reads the key again.
 * Its insert waits on a key held uncommitted elsewhere for `KEY_LOCK_WAIT_MS` at most, then fails
 * with 55P03 (see `isKeyLockWait`): that key is an attempt in progress.
 *
 * Parameters: merchant, operation, key, request hash, canonical request, reserve, charge id, lock
 * token, lease ms, customer, amount, currency, description, metadata (jsonb), provider key,
 * authorized only (`capture: false`).
 * The state columns are those of `keyStateColumns`: change both together.
 */
function claimText(keys: string, charges: string): string {
  return `
    WITH ${KEY_LOCK_WAIT_CTE} existing AS (
      SELECT k.request_hash, k.recovery_point, k.charge_id::text AS charge_id,
        ${LEASE_COLUMNS},
        k.attempts, k.response_status, k.response_body, c.status AS charge_status,
        c.provider_key, c.provider_charge_id,
        CASE WHEN k.request_hash IS DISTINCT FROM $4::text THEN k.request END AS stored_request
      FROM ${keys} k
      LEFT JOIN LATERAL (${chargeOfKey('k', charges)}) c ON true
      WHERE k.merchant_id = $1::text AND k.operation = $2::text AND k.key = $3::text
    ), claimed AS (
      INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request, recovery_point,
        charge_id, lock_token, locked_until)
      SELECT $1::text, $2::text, $3::text, $4::text, $5::text,
        CASE WHEN $6::boolean THEN 'reserved' ELSE 'started' END, $7::uuid, $8::uuid,
        now() + $9::float8 * interval '1 millisecond'
      FROM lock_wait
      WHERE NOT EXISTS (SELECT 1 FROM existing)
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING charge_id
    ), intent AS (
      INSERT INTO ${charges} (merchant_id, id, customer_id, amount_minor, currency, description,
        metadata, provider_key, status, authorized_only, operation)
      SELECT $1::text, charge_id, $10::text, $11::bigint, $12::text, $13::text, $14::jsonb,
        $15::text, 'reserved', $16::boolean, $2::text
      FROM claimed
      WHERE $6::boolean
      RETURNING id
    )
    -- In this order: the insert (and its wait) first, then the session's lock_timeout put back,
    -- for a transaction that goes on (a \`reserve\` hook's statements run after this one). Only
    -- when the insert was tried: a replay, a 409 or a 422 sets nothing and puts nothing back.
    SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, e.*,
      CASE WHEN e.request_hash IS NULL
        THEN (SELECT set_config('lock_timeout', was, true) FROM lock_wait)
      END AS lock_timeout
    FROM (SELECT 1) AS one
    LEFT JOIN existing e ON true`;
}

/**
 * The completion: records the outcome on the charge, stores the response, moves the key to
 * `completed` and releases the lease, fenced by the lock token: no row (and nothing written) for
 * an attempt whose lease was taken over. When the key had waiters, the same row notifies them: a
 * `CASE` in the one row returned, not a CTE counted by a subquery, which cost a fresh charge about
 * 10–20 µs more of PostgreSQL's CPU (two more plan nodes run on every completion).
 *
 * Parameters: merchant, operation, key, lock token, charge status, provider charge id, decline
 * code, response status, response body.
 */
function completeText(keys: string, charges: string, schema: string): string {
  return `
    WITH done AS (
      UPDATE ${keys}
      SET recovery_point = 'completed', response_status = $8::int4, response_body = $9::text,
        lock_token = NULL, locked_until = NULL, completed_at = now(), updated_at = now()
      WHERE merchant_id = $1::text AND operation = $2::text AND key = $3::text
        AND lock_token = $4::uuid AND recovery_point IN ('started', 'reserved')
      -- The row as updated: a waiter's mark committed while this waited on the row is in it.
      RETURNING merchant_id, operation, key, charge_id, has_waiters AS had_waiters
    ), recorded AS (
      UPDATE ${charges} c
      SET status = $5::text, provider_charge_id = $6::text, decline_code = $7::text,
        updated_at = now()
      FROM done
      WHERE c.merchant_id = done.merchant_id AND c.id = done.charge_id
    )
    SELECT true AS completed,
      CASE WHEN done.had_waiters
        THEN pg_notify(${waitersChannelLiteral}, ${waiterPayloadSql(schema, 'done')}) IS NULL
      END AS woken
    FROM done`;
}

/** The channel completions notify waiters on: one per database, the payload names the key. */
export const WAITERS_CHANNEL = 'chargeonce_key_done';
const waitersChannelLiteral = `'${WAITERS_CHANNEL}'`;

/**
 * The payload of a waiter's notification, as SQL over the row alias `row`: schema, merchant,
 * operation and key, one per line (none of them can hold a line break: ids refuse control
 * characters, keys are printable ASCII, the schema a plain identifier).
 */
export function waiterPayloadSql(schema: string, row: string): string {
  return `'${schema}' || chr(10) || ${row}.merchant_id || chr(10) || ${row}.operation || chr(10) || ${row}.key`;
}

/** The same payload, in JavaScript, for the key a caller waits on. */
export function waiterPayload(
  schema: string,
  scoped: { merchantId: string; operation: string; key: string },
): string {
  return `${schema}\n${scoped.merchantId}\n${scoped.operation}\n${scoped.key}`;
}

/** The quoted names a statement's text is built from, for one schema. */
export type SchemaNames = { schema: string; keys: string; charges: string; movements: string };

/**
 * Statements built once per schema and kept: `build` gets the schema's quoted table names. The
 * schema name was checked by `tablesIn` (a plain lower-case identifier), so quoting it is enough.
 */
export function perSchema<T>(build: (names: SchemaNames) => T): (tables: Tables) => T {
  const cache = new Map<string, T>();
  return (tables) => {
    let built = cache.get(tables.schema);
    if (built === undefined) {
      const { schema } = tables;
      built = build({
        schema,
        keys: `"${schema}".idempotency_keys`,
        charges: `"${schema}".charges`,
        movements: `"${schema}".movements`,
      });
      cache.set(schema, built);
    }
    return built;
  };
}

/**
 * The hot statements as text: sent to node-postgres with `name` set, PostgreSQL parses and plans
 * each once per connection and each call is one Bind/Execute round trip; through slonik the same
 * text is sent unnamed.
 */
export const hotStatements: (tables: Tables) => HotStatements = perSchema(
  ({ schema, keys, charges }) => ({
    claim: prepared(claimText(keys, charges)),
    complete: prepared(completeText(keys, charges, schema)),
  }),
);
