import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import { completeParkedUpdate } from './completeParkedKey.js';
import type { ScopedKey } from './keyState.js';
import { CHARGE_ROW_WAIT_CTE } from './movementStatements.js';
import { constantFragment } from './rawQuery.js';
import type { Tables } from './tables.js';

/** The wait on the charge's row, as the engine's completion's. */
const CHARGE_ROW_WAIT = constantFragment(CHARGE_ROW_WAIT_CTE);

/** The outcome a person resolved a parked refund or capture with, as it is stored. */
export type ParkedMovementCompletion = ScopedKey & {
  /** The token `takeParkedMovement` set. */
  lockToken: string;
  status: 'succeeded' | 'failed' | 'cancelled';
  providerMovementId: string | null;
  failureCode: string | null;
  responseStatus: number;
  responseBody: string;
};

/**
 * The completion of a parked refund or capture a person resolved, in one statement fenced by
 * the lock token `takeParkedMovement` set: stores the response, moves the key from `failed` to
 * `completed` and releases it, records the result on the movement, and gives its reservation
 * back to the charge exactly as the engine's own completion does (`movementStatements`): a
 * refund's amount moves from held to refunded when it succeeded and is only released otherwise;
 * a capture's hold ends, and a succeeded capture's reserved amount becomes what was captured
 * (the engine never stores a capture for another amount: such an answer parks the key).
 *
 * `completed` is false (nothing written) when the key is not parked under that token; `settled`
 * is false when the movement held no reservation, and the caller must roll back.
 *
 * It waits on the charge's row, behind a sibling refund's claim or completion (its `complete`
 * hook, say), for `CHARGE_ROW_WAIT_MS` at most, as the engine's completion does: past that it
 * fails with 55P03 (`StoreUnavailableError`), and the caller's transaction rolls back, the key
 * still parked, rather than holding the person and a connection for as long as the sibling
 * takes. The session's own `lock_timeout`, if shorter, is kept, and put back for the hook's
 * statements that follow in the transaction.
 */
export async function completeParkedMovement(
  db: CommonQueryMethods,
  tables: Tables,
  input: ParkedMovementCompletion,
): Promise<{ completed: boolean; settled: boolean }> {
  return db.one(sql.type(z.object({ completed: z.boolean(), settled: z.boolean() }))`
    WITH ${CHARGE_ROW_WAIT} done AS (${completeParkedUpdate(tables, input)}), moved AS (
      UPDATE ${tables.movements} m
      SET status = ${input.status}::text, provider_movement_id = ${input.providerMovementId},
        failure_code = ${input.failureCode}, updated_at = now()
      FROM done
      WHERE m.merchant_id = done.merchant_id AND m.id = done.charge_id AND m.status = 'reserved'
      RETURNING m.merchant_id, m.kind, m.charge_id, m.amount_minor
    ), settled AS (
      UPDATE ${tables.charges} c
      SET refund_reserved_minor = CASE WHEN mv.kind = 'refund'
            THEN c.refund_reserved_minor - mv.amount_minor ELSE c.refund_reserved_minor END,
          refunded_minor = CASE WHEN mv.kind = 'refund' AND ${input.status}::text = 'succeeded'
            THEN c.refunded_minor + mv.amount_minor ELSE c.refunded_minor END,
          capture_reserved_minor = CASE WHEN mv.kind = 'capture'
            THEN NULL ELSE c.capture_reserved_minor END,
          captured_minor = CASE WHEN mv.kind = 'capture' AND ${input.status}::text = 'succeeded'
            THEN mv.amount_minor ELSE c.captured_minor END,
          updated_at = now()
      -- The wait is set before the join yields the row to lock: it reads \`lock_wait\`.
      FROM moved mv, lock_wait
      WHERE c.merchant_id = mv.merchant_id AND c.id = mv.charge_id
      RETURNING c.id
    )
    -- The session's lock_timeout put back once the charge's row is written: counting
    -- \`settled\` here runs it first.
    SELECT EXISTS (SELECT 1 FROM done) AS completed, charge_written.n > 0 AS settled,
      set_config('lock_timeout', l.was, true) AS lock_timeout
    FROM lock_wait l, (SELECT count(*) AS n FROM settled) AS charge_written`);
}
