import {
  LEASE_COLUMNS,
  perSchema,
  prepared,
  waiterPayloadSql,
  WAITERS_CHANNEL,
} from './hotStatements.js';
import type { PreparedStatement } from './hotStatements.js';
import { KEY_LOCK_WAIT_CTE, lockWaitCte, setShorterLockTimeout } from './keyLockWait.js';
import type { Tables } from './tables.js';

/**
 * How long a refund's or capture's claim waits on its charge's row, at most: movements of one
 * charge take their turns there, each for the few milliseconds of its claim or completion, but
 * one whose `reserve` or `complete` hook takes its time holds the row for as long, and every
 * claim behind it holds one of its pool's connections meanwhile. Past this the claim fails with
 * 55P03 (`StoreUnavailableError`, 503, nothing written: retry). Well past a line of racing claims.
 */
export const CHARGE_ROW_WAIT_MS = 1_000;

/**
 * The completions' `lock_wait` CTE (the engine's, and a person's resolve): the charge's row (and
 * its own key) waited on that long.
 */
export const CHARGE_ROW_WAIT_CTE = lockWaitCte(String(CHARGE_ROW_WAIT_MS));

/** The two statements of a fresh refund or capture, as of a charge, for one schema. */
export type MovementStatements = { claim: PreparedStatement; complete: PreparedStatement };

/**
 * The claim of a refund or capture: like the charge's claim it reads the key first (a replay, a
 * 409 or a 422 is one index read) and otherwise inserts it at `reserved`, with the movement, in
 * one statement and one commit. The reservation is one conditional UPDATE of the charge's row:
 * it takes the row lock, so racing movements of one charge go one at a time, and each re-checks
 * the condition on the row as the one before it left it (READ COMMITTED re-evaluates an UPDATE's
 * WHERE on the newest row version). A refund holds `amount` while refunds succeeded plus refunds
 * held plus `amount` stay within what was captured; a capture holds the authorization while
 * nothing was captured or held. When the condition fails, the movement is written `refused`,
 * with the reason read from the charge (for the stored, replayed refusal).
 *
 * Its insert waits on a key held uncommitted elsewhere for `KEY_LOCK_WAIT_MS` at most, as a
 * charge's claim does (then 55P03, see `isKeyLockWait`); then the charge's row for
 * `CHARGE_ROW_WAIT_MS` at most (the line racing movements of one charge stand in: longer, as a
 * wait there is not a sign of an attempt of this key in progress). A session's shorter
 * `lock_timeout` is kept for both, and put back for a transaction that goes on.
 *
 * Parameters: merchant, operation, key, request hash, canonical request, movement id, lock token,
 * lease ms, kind (`refund`/`capture`), charge id, amount (null: a capture of all), reason,
 * provider key, the engine's operation (a charge of another is read as not found).
 */
function claimText(keys: string, charges: string, movements: string): string {
  return `
    WITH ${KEY_LOCK_WAIT_CTE} existing AS (
      SELECT k.request_hash, k.recovery_point, k.charge_id::text AS charge_id,
        ${LEASE_COLUMNS},
        k.attempts, k.response_status, k.response_body, m.status AS movement_status,
        m.provider_movement_id,
        CASE WHEN k.request_hash IS DISTINCT FROM $4::text THEN k.request END AS stored_request
      FROM ${keys} k
      -- By the movement's primary key, kept apart from the join (see chargeOfKey).
      LEFT JOIN LATERAL (
        SELECT m.status, m.provider_movement_id FROM ${movements} m
        WHERE m.merchant_id = k.merchant_id AND m.id = k.charge_id
        OFFSET 0
      ) m ON true
      WHERE k.merchant_id = $1::text AND k.operation = $2::text AND k.key = $3::text
    ), claimed AS (
      INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request, recovery_point,
        charge_id, lock_token, locked_until)
      SELECT $1::text, $2::text, $3::text, $4::text, $5::text, 'reserved', $6::uuid, $7::uuid,
        now() + $8::float8 * interval '1 millisecond'
      FROM lock_wait
      WHERE NOT EXISTS (SELECT 1 FROM existing)
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING charge_id
    ), row_wait AS MATERIALIZED (
      -- The charge row's wait, set once the insert (and its wait) is done: reading every row of
      -- \`claimed\` runs it to the end first.
      SELECT ${setShorterLockTimeout('l.was', String(CHARGE_ROW_WAIT_MS))} AS lock_timeout
      FROM lock_wait l, (SELECT count(*) FROM claimed) AS inserted
    ), seen AS (
      -- The charge, locked first: a claim waits here for a movement that holds the row (its
      -- claim or completion committing) and reads the row as that one left it. Both the
      -- decision (\`held\`) and the reason a refusal is told are made on this one version: an
      -- UPDATE alone decides on the row as this statement's start saw it whenever that fails
      -- its condition, and a read beside it could tell another reason. Locked only for a claim:
      -- a replay locks nothing.
      SELECT c.status, c.authorized_only, c.captured_minor, c.capture_reserved_minor,
        c.refunded_minor, c.refund_reserved_minor, c.amount_minor, c.currency,
        c.provider_charge_id
      FROM ${charges} c
      WHERE c.merchant_id = $1::text AND c.id = $10::uuid
        -- A charge of another operation is another provider's: not found here.
        AND (c.operation IS NULL OR c.operation = $14::text)
        AND EXISTS (SELECT 1 FROM claimed) AND EXISTS (SELECT 1 FROM row_wait)
      FOR NO KEY UPDATE
    ), held AS (
      -- The SET asks again what the WHERE asked of \`seen\`, of the row it writes: PostgreSQL
      -- checks the table's CHECK constraints on the row made from the version this statement's
      -- snapshot saw before it finds that version outdated and makes the row again from the
      -- newest (the one \`seen\` locked). Made from an outdated version (before a capture that
      -- committed since), an unconditional sum broke \`charges_refunds_within_capture\`, and the
      -- claim failed. On the row finally written the two questions get the same answer.
      UPDATE ${charges} c
      -- A charge made before charges recorded their operation belongs from now on to the
      -- engine whose provider moves it: its sweepers, and only theirs, finish this movement.
      SET operation = coalesce(c.operation, $14::text),
        refund_reserved_minor = CASE WHEN $9::text = 'refund'
            AND c.refunded_minor + c.refund_reserved_minor + $11::bigint
              <= CASE WHEN c.authorized_only THEN coalesce(c.captured_minor, 0)
                 ELSE c.amount_minor END
            THEN c.refund_reserved_minor + $11::bigint ELSE c.refund_reserved_minor END,
          capture_reserved_minor = CASE WHEN $9::text = 'capture' AND c.captured_minor IS NULL
            THEN coalesce($11::bigint, c.amount_minor) ELSE c.capture_reserved_minor END,
          updated_at = now()
      FROM seen s
      WHERE c.merchant_id = $1::text AND c.id = $10::uuid
        AND s.status = 'succeeded'
        AND CASE WHEN $9::text = 'refund'
          THEN s.refunded_minor + s.refund_reserved_minor + $11::bigint
            <= CASE WHEN s.authorized_only THEN coalesce(s.captured_minor, 0)
               ELSE s.amount_minor END
          ELSE s.authorized_only AND s.captured_minor IS NULL
            AND s.capture_reserved_minor IS NULL
            AND coalesce($11::bigint, s.amount_minor) <= s.amount_minor
          END
      RETURNING c.currency, c.provider_charge_id,
        coalesce($11::bigint, c.amount_minor) AS amount_minor
    ), movement AS (
      INSERT INTO ${movements} (merchant_id, id, kind, charge_id, amount_minor, currency, reason,
        provider_key, provider_charge_id, status, refusal)
      SELECT $1::text, $6::uuid, $9::text, $10::uuid,
        coalesce(h.amount_minor, $11::bigint, s.amount_minor), coalesce(h.currency, s.currency),
        $12::text, $13::text, coalesce(h.provider_charge_id, s.provider_charge_id),
        CASE WHEN h.currency IS NOT NULL THEN 'reserved' ELSE 'refused' END,
        CASE
          WHEN h.currency IS NOT NULL THEN NULL
          WHEN s.status IS NULL THEN 'charge_not_found'
          WHEN s.status <> 'succeeded' THEN 'charge_not_succeeded'
          WHEN $9::text = 'refund' AND s.authorized_only AND s.captured_minor IS NULL
            THEN 'charge_not_captured'
          WHEN $9::text = 'refund' THEN 'exceeds_refundable'
          WHEN NOT s.authorized_only OR s.captured_minor IS NOT NULL
            OR s.capture_reserved_minor IS NOT NULL THEN 'charge_not_capturable'
          ELSE 'exceeds_authorized'
        END
      FROM claimed
      LEFT JOIN held h ON true
      LEFT JOIN seen s ON true
      RETURNING status, refusal, amount_minor, currency, provider_charge_id
    )
    -- The session's lock_timeout put back, once the movement (and so the charge row's lock) is
    -- done, for a transaction that goes on (a \`reserve\` hook's statements run after this one);
    -- also for a claim whose insert lost its race (ON CONFLICT, no row). A replay, a 409 or a 422
    -- set nothing and put nothing back.
    SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, e.*, mv.status AS new_status,
      mv.refusal AS new_refusal, mv.amount_minor::float8 AS new_amount_minor,
      mv.currency AS new_currency, mv.provider_charge_id AS new_provider_charge_id,
      CASE WHEN e.request_hash IS NULL
        THEN (SELECT set_config('lock_timeout', was, true) FROM lock_wait)
      END AS lock_timeout
    FROM (SELECT 1) AS one
    LEFT JOIN existing e ON true
    LEFT JOIN movement mv ON true`;
}

/**
 * The completion of a refund or capture: stores the response, completes the key and releases
 * its lease, fenced by the lock token (no row, nothing written, for a zombie); a
 * movement that held a reservation gets its result and gives the reservation back to the charge:
 * a refund's amount moves from held to refunded when it succeeded, a capture's becomes the
 * captured amount (`$10`, what the provider captured). A refused movement held nothing.
 *
 * It waits on the charge's row, behind a sibling movement's claim or completion, for
 * `CHARGE_ROW_WAIT_MS` at most, as a claim does, and holds one pool connection meanwhile: past
 * that it fails with 55P03 (`StoreUnavailableError`), nothing written, the key still `reserved`
 * for a retry or the sweeper to adopt what the provider did. The session's own `lock_timeout`, if
 * shorter, is kept, and put back for the `complete` hook's statements that follow in its
 * transaction.
 *
 * Parameters: merchant, operation, key, lock token, movement status, provider movement id,
 * failure code, response status, response body, captured amount, refusal (a `reserve` hook's).
 */
function completeText(keys: string, charges: string, movements: string, schema: string): string {
  return `
    WITH ${CHARGE_ROW_WAIT_CTE} done AS (
      UPDATE ${keys}
      SET recovery_point = 'completed', response_status = $8::int4, response_body = $9::text,
        lock_token = NULL, locked_until = NULL, completed_at = now(), updated_at = now()
      FROM lock_wait
      WHERE merchant_id = $1::text AND operation = $2::text AND key = $3::text
        AND lock_token = $4::uuid AND recovery_point IN ('started', 'reserved')
      RETURNING merchant_id, operation, key, charge_id, has_waiters AS had_waiters
    ), moved AS (
      UPDATE ${movements} m
      SET status = $5::text, provider_movement_id = $6::text, failure_code = $7::text,
        refusal = $11::text, updated_at = now()
      FROM done
      WHERE m.merchant_id = done.merchant_id AND m.id = done.charge_id AND m.status = 'reserved'
      RETURNING m.merchant_id, m.kind, m.charge_id, m.amount_minor
    ), settled AS (
      UPDATE ${charges} c
      SET refund_reserved_minor = CASE WHEN mv.kind = 'refund'
            THEN c.refund_reserved_minor - mv.amount_minor ELSE c.refund_reserved_minor END,
          refunded_minor = CASE WHEN mv.kind = 'refund' AND $5::text = 'succeeded'
            THEN c.refunded_minor + mv.amount_minor ELSE c.refunded_minor END,
          capture_reserved_minor = CASE WHEN mv.kind = 'capture'
            THEN NULL ELSE c.capture_reserved_minor END,
          captured_minor = CASE WHEN mv.kind = 'capture' AND $5::text = 'succeeded'
            THEN $10::bigint ELSE c.captured_minor END,
          updated_at = now()
      FROM moved mv
      WHERE c.merchant_id = mv.merchant_id AND c.id = mv.charge_id
      RETURNING c.id
    )
    -- The session's lock_timeout put back once the charge's row is written: reading \`settled\`
    -- here runs it first (a CTE nothing reads runs after the statement's own rows).
    SELECT true AS completed,
      CASE WHEN done.had_waiters
        THEN pg_notify('${WAITERS_CHANNEL}', ${waiterPayloadSql(schema, 'done')}) IS NULL
      END AS woken,
      set_config('lock_timeout', l.was, true) AS lock_timeout
    FROM done, lock_wait l, (SELECT count(*) FROM settled) AS charge_written`;
}

/** The movement statements of one schema, built once. */
export const movementStatements: (tables: Tables) => MovementStatements = perSchema(
  ({ schema, keys, charges, movements }) => ({
    claim: prepared(claimText(keys, charges, movements)),
    complete: prepared(completeText(keys, charges, movements, schema)),
  }),
);
