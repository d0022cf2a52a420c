import {
  LEASE_COLUMNS,
  perSchema,
  prepared,
  chargeOfKey,
  WAITERS_CHANNEL,
  waiterPayloadSql,
  type PreparedStatement,
} from './hotStatements.js';
import type { Tables } from './tables.js';
import { KEY_LOCK_WAIT_CTE } from './keyLockWait.js';

/** The hot statements over arrays: many claims (or completions) in one round trip and commit. */
export type BatchStatements = { claim: PreparedStatement; complete: PreparedStatement };

/**
 * A batch of claims waits on a lock for `KEY_LOCK_WAIT_MS` at most, as a claim alone does, then
 * goes again one call at a time: a key held uncommitted by another transaction (a claim inside
 * another process's `reserve` hook) must hold up only its own call, not the batch's other keys.
 *
 * Claims only. A batch completion updates keys its own attempts hold the leases of, which
 * another transaction holds only for a moment (a waiter's mark), and one that wakes waiters
 * takes PostgreSQL's NOTIFY lock at commit, which the timeout would cover too: commits that
 * notify queue for it, and a slow disk would fail whole batches. A completion batch cut short
 * by a statement timeout still goes again call by call (see `isOutOfReach`).
 */

/**
 * The claim of `hotStatements`, for many keys at once: one row of each array per claim. Each
 * key's outcome is its own: an existing key is read, a missing one inserted (ON CONFLICT DO
 * NOTHING, so a key a racing claim took is skipped, not an error), and its intent written when
 * `reserve`. Inserts go in key order, so two batches never wait on each other's keys in opposite
 * orders (no deadlock). A key may come more than once (a storm of retries): its first claim in
 * the batch inserts it, and the others are answered with the row it inserted (held, with its
 * lease), as a claim right after the first would be. One row per claim comes back, in input
 * order (`n`), as the single statement's row.
 */
function claimText(keys: string, charges: string): string {
  return `
    WITH ${KEY_LOCK_WAIT_CTE} input AS (
      SELECT i.* FROM lock_wait, unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
        $6::boolean[], $7::uuid[], $8::uuid[], $9::float8[], $10::text[], $11::bigint[],
        $12::text[], $13::text[], $14::jsonb[], $15::text[], $16::boolean[])
        WITH ORDINALITY AS i(merchant_id, operation, key, request_hash, request, reserve,
          charge_id, lock_token, lease_ms, customer_id, amount_minor, currency, description,
          metadata, provider_key, authorized_only, n)
    ), existing AS (
      SELECT i.n, k.request_hash, k.recovery_point, k.charge_id::text AS charge_id,
        ${LEASE_COLUMNS},
        k.attempts, k.response_status, k.response_body, c.status AS charge_status,
        c.provider_key, c.provider_charge_id,
        CASE WHEN k.request_hash IS DISTINCT FROM i.request_hash THEN k.request END
          AS stored_request
      FROM input i
      JOIN ${keys} k
        ON k.merchant_id = i.merchant_id AND k.operation = i.operation AND k.key = i.key
      LEFT JOIN LATERAL (${chargeOfKey('k', charges)}) c ON true
    ), claimed AS (
      INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request, recovery_point,
        charge_id, lock_token, locked_until)
      SELECT DISTINCT ON (i.merchant_id, i.operation, i.key)
        i.merchant_id, i.operation, i.key, i.request_hash, i.request,
        CASE WHEN i.reserve THEN 'reserved' ELSE 'started' END, i.charge_id, i.lock_token,
        now() + i.lease_ms * interval '1 millisecond'
      FROM input i
      WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n)
      ORDER BY i.merchant_id, i.operation, i.key, i.n
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING merchant_id, operation, key, charge_id, request_hash, request, recovery_point,
        attempts, lock_token, locked_until
    ), intent AS (
      INSERT INTO ${charges} (merchant_id, id, customer_id, amount_minor, currency, description,
        metadata, provider_key, status, authorized_only, operation)
      SELECT i.merchant_id, i.charge_id, i.customer_id, i.amount_minor, i.currency,
        i.description, i.metadata, i.provider_key, 'reserved', i.authorized_only, i.operation
      FROM claimed cl
      JOIN input i ON i.merchant_id = cl.merchant_id AND i.operation = cl.operation
        AND i.key = cl.key AND i.charge_id = cl.charge_id
      WHERE i.reserve
      ORDER BY i.merchant_id, i.charge_id
      RETURNING merchant_id, id, status, provider_key
    ), won AS (
      -- The keys this batch inserted, as the claims after the first of each see them.
      SELECT k.merchant_id, k.operation, k.key, k.charge_id AS winner, k.request,
        k.request_hash, k.recovery_point, k.charge_id::text AS charge_id, ${LEASE_COLUMNS},
        k.attempts, it.status AS charge_status, it.provider_key
      FROM claimed k
      LEFT JOIN intent it ON it.merchant_id = k.merchant_id AND it.id = k.charge_id
    )
    -- A key existed or was inserted here, never both: each state column is the one there is.
    SELECT i.n, COALESCE(w.winner = i.charge_id, false) AS claimed,
      COALESCE(e.request_hash, w.request_hash) AS request_hash,
      COALESCE(e.recovery_point, w.recovery_point) AS recovery_point,
      COALESCE(e.charge_id, w.charge_id) AS charge_id,
      COALESCE(e.lease_held, w.lease_held) AS lease_held,
      COALESCE(e.lease_remaining_ms, w.lease_remaining_ms) AS lease_remaining_ms,
      COALESCE(e.attempts, w.attempts) AS attempts,
      e.response_status, e.response_body,
      COALESCE(e.charge_status, w.charge_status) AS charge_status,
      COALESCE(e.provider_key, w.provider_key) AS provider_key,
      e.provider_charge_id,
      COALESCE(e.stored_request,
        CASE WHEN w.request_hash IS DISTINCT FROM i.request_hash THEN w.request END)
        AS stored_request
    FROM input i
    LEFT JOIN existing e ON e.n = i.n
    LEFT JOIN won w ON w.merchant_id = i.merchant_id AND w.operation = i.operation
      AND w.key = i.key
    ORDER BY i.n`;
}

/**
 * The completion of `hotStatements`, for many keys at once, each fenced by its own lock token:
 * one row per completion, in input order, `completed` false for an attempt whose lease was
 * taken over (nothing written for it).
 */
function completeText(keys: string, charges: string, schema: string): string {
  return `
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[], $5::text[],
        $6::text[], $7::text[], $8::int4[], $9::text[])
        WITH ORDINALITY AS i(merchant_id, operation, key, lock_token, charge_status,
          provider_charge_id, decline_code, response_status, response_body, n)
    ), done AS (
      UPDATE ${keys} k
      SET recovery_point = 'completed', response_status = i.response_status,
        response_body = i.response_body, lock_token = NULL, locked_until = NULL,
        completed_at = now(), updated_at = now()
      FROM input i
      WHERE k.merchant_id = i.merchant_id AND k.operation = i.operation AND k.key = i.key
        AND k.lock_token = i.lock_token AND k.recovery_point IN ('started', 'reserved')
      RETURNING i.n, k.merchant_id, k.operation, k.key, k.charge_id, k.has_waiters AS had_waiters
    ), recorded AS (
      UPDATE ${charges} c
      SET status = i.charge_status, provider_charge_id = i.provider_charge_id,
        decline_code = i.decline_code, updated_at = now()
      FROM done d
      JOIN input i ON i.n = d.n
      WHERE c.merchant_id = d.merchant_id AND c.id = d.charge_id
    )
    SELECT i.n, d.n IS NOT NULL AS completed,
      CASE WHEN d.had_waiters
        THEN pg_notify('${WAITERS_CHANNEL}', ${waiterPayloadSql(schema, 'd')}) IS NULL
      END AS woken
    FROM input i
    LEFT JOIN done d ON d.n = i.n
    ORDER BY i.n`;
}

/** The batch statements for one schema (named after their text, as `hotStatements`). */
export const batchStatements: (tables: Tables) => BatchStatements = perSchema(
  ({ schema, keys, charges }) => ({
    claim: prepared(claimText(keys, charges)),
    complete: prepared(completeText(keys, charges, schema)),
  }),
);
