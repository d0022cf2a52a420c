import {
  LEASE_COLUMNS,
  perSchema,
  prepared,
  WAITERS_CHANNEL,
  waiterPayloadSql,
  type PreparedStatement,
} from './hotStatements.js';
import type { Tables } from './tables.js';

/** The hot statements over arrays: many claims (or completions) in one round trip and commit. */
export type BatchStatements = { claim: PreparedStatement; complete: PreparedStatement };

/**
 * The claim of `hotStatements`, for many keys at once: one row of each array per claim, keys
 * distinct (the caller never puts one key twice in a batch). Each key's outcome is its own: an
 * existing key is read, a missing one inserted (ON CONFLICT DO NOTHING, so a key a racing claim
 * took is skipped, not an error), and its intent written when `reserve`. Inserts go in key order,
 * so two batches never wait on each other's keys in opposite orders (no deadlock). One row per
 * claim comes back, in input order (`n`), as the single statement's row.
 */
function claimText(keys: string, charges: string): string {
  return `
    WITH input AS (
      SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
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
      LEFT JOIN ${charges} c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    ), claimed AS (
      INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request, recovery_point,
        charge_id, lock_token, locked_until)
      SELECT i.merchant_id, i.operation, i.key, i.request_hash, i.request,
        CASE WHEN i.reserve THEN 'reserved' ELSE 'started' END, i.charge_id, i.lock_token,
        now() + i.lease_ms * interval '1 millisecond'
      FROM input i
      WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n)
      ORDER BY i.merchant_id, i.operation, i.key
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING merchant_id, operation, key, charge_id
    ), intent AS (
      INSERT INTO ${charges} (merchant_id, id, customer_id, amount_minor, currency, description,
        metadata, provider_key, status, authorized_only)
      SELECT i.merchant_id, i.charge_id, i.customer_id, i.amount_minor, i.currency,
        i.description, i.metadata, i.provider_key, 'reserved', i.authorized_only
      FROM claimed cl
      JOIN input i ON i.merchant_id = cl.merchant_id AND i.operation = cl.operation
        AND i.key = cl.key
      WHERE i.reserve
      ORDER BY i.merchant_id, i.charge_id
      RETURNING id
    )
    SELECT i.n, (cl.key IS NOT NULL) AS claimed, e.request_hash, e.recovery_point, e.charge_id,
      e.lease_held, e.lease_remaining_ms, e.attempts, e.response_status, e.response_body,
      e.charge_status, e.provider_key, e.provider_charge_id, e.stored_request
    FROM input i
    LEFT JOIN claimed cl ON cl.merchant_id = i.merchant_id AND cl.operation = i.operation
      AND cl.key = i.key
    LEFT JOIN existing e ON e.n = i.n
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
      RETURNING c.id
    ), woken AS (
      SELECT pg_notify('${WAITERS_CHANNEL}', ${waiterPayloadSql(schema, 'd')})
      FROM done d WHERE d.had_waiters
    )
    SELECT i.n, EXISTS (SELECT 1 FROM done d WHERE d.n = i.n) AS completed,
      (SELECT count(*) FROM woken) AS woken
    FROM input i
    ORDER BY i.n`;
}

/** The batch statements for one schema (named after their text, as `hotStatements`). */
export const batchStatements: (tables: Tables) => BatchStatements = perSchema(
  ({ schema, keys, charges }) => ({
    claim: prepared(claimText(keys, charges)),
    complete: prepared(completeText(keys, charges, schema)),
  }),
);
