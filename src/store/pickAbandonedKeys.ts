import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import { nowPlusMs } from './keyState.js';
import {
  reservationColumns,
  reservationSelect,
  toReservation,
  type Reservation,
} from './reservation.js';
import { movementOfAnotherOperation } from './movementOwner.js';
import type { Tables } from './tables.js';

/** An abandoned key the sweeper now holds, with everything needed to finish it. */
export type AbandonedKey = {
  merchantId: string;
  operation: string;
  key: string;
  /** The canonical request text stored at claim time. */
  request: string;
  recoveryPoint: 'started' | 'reserved';
  chargeId: string;
  lockToken: string;
  /** Every attempt at the key, a client's and the sweeper's, this one included. */
  attempts: number;
  /** The sweeper's own attempts at the key since it was claimed or requeued, this one included. */
  sweeps: number;
  /** Null at `started`: no intent yet. */
  providerKey: string | null;
  /** When the charge intent was written, and how long ago; null at `started`. */
  reservation: Reservation | null;
};

const abandonedRow = z.object({
  merchant_id: z.string(),
  operation: z.string(),
  key: z.string(),
  request: z.string(),
  recovery_point: z.enum(['started', 'reserved']),
  charge_id: z.string(),
  lock_token: z.string(),
  attempts: z.number().int(),
  sweeps: z.number().int(),
  provider_key: z.string().nullable(),
  ...reservationColumns,
});

/**
 * Picks up to `limit` unfinished keys of the given operations whose lease ran out (or was released) at
 * least `graceMs` ago, and takes each one's lease with a fresh token, in
 * one statement. A refund or capture key is picked only when its charge was made under
 * `chargeOperation` (or before charges recorded theirs): a charge of another operation is another
 * engine's, whose provider made it and its movements; this engine's provider would find none of
 * them, and the sweeper would cancel a refund that went through. `FOR UPDATE SKIP LOCKED` lets any number of sweepers run at once: each takes
 * different keys, and a key taken is invisible to the others until its new lease runs out.
 */
export async function pickAbandonedKeys(
  db: CommonQueryMethods,
  tables: Tables,
  options: {
    operations: readonly string[];
    chargeOperation: string;
    limit: number;
    graceMs: number;
    leaseMs: number;
  },
): Promise<AbandonedKey[]> {
  const rows = await db.any(sql.type(abandonedRow)`
    WITH picked AS (
      SELECT merchant_id, operation, key
      FROM ${tables.keys} k
      WHERE recovery_point IN ('started', 'reserved')
        AND operation = ANY(${sql.array(options.operations, 'text')})
        AND NOT ${movementOfAnotherOperation(tables, options.chargeOperation)}
        -- Idle for graceMs past the end of its lease (or past its release): room for the
        -- client's own retry, and for a provider call still in flight when the lease ended.
        AND (CASE WHEN lock_token IS NULL THEN updated_at ELSE locked_until END)
          <= now() - ${options.graceMs}::float8 * interval '1 millisecond'
      ORDER BY updated_at
      LIMIT ${options.limit}
      FOR UPDATE SKIP LOCKED
    ), taken AS (
      UPDATE ${tables.keys} k
      SET lock_token = gen_random_uuid(),
          locked_until = ${nowPlusMs(options.leaseMs)},
          attempts = k.attempts + 1,
          sweeps = k.sweeps + 1,
          updated_at = now()
      FROM picked p
      WHERE k.merchant_id = p.merchant_id AND k.operation = p.operation AND k.key = p.key
      RETURNING k.merchant_id, k.operation, k.key, k.request, k.recovery_point, k.charge_id,
        k.lock_token, k.attempts, k.sweeps
    )
    SELECT t.merchant_id, t.operation, t.key, t.request, t.recovery_point,
      t.charge_id::text AS charge_id, t.lock_token::text AS lock_token, t.attempts, t.sweeps,
      c.provider_key, ${reservationSelect}
    FROM taken t
    LEFT JOIN ${tables.charges} c ON c.merchant_id = t.merchant_id AND c.id = t.charge_id
  `);
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    operation: row.operation,
    key: row.key,
    request: row.request,
    recoveryPoint: row.recovery_point,
    chargeId: row.charge_id,
    lockToken: row.lock_token,
    attempts: row.attempts,
    sweeps: row.sweeps,
    providerKey: row.provider_key,
    reservation: toReservation(row),
  }));
}
