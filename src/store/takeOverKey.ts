import { z } from 'zod';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { nowPlusMs, RECOVERY_POINTS, type ScopedKey } from './keyState.js';
import {
  reservationColumns,
  reservationSelect,
  toReservation,
  type Reservation,
} from './reservation.js';
import type { Tables } from './tables.js';
import { KEY_LOCK_WAIT_CTE } from './keyLockWait.js';
import { constantFragment } from './rawQuery.js';

/** What an attempt that took a key over resumes from. */
export type TakenKey = {
  recoveryPoint: 'started' | 'reserved';
  chargeId: string;
  attempts: number;
  /** Null at `started`: the charge intent is not written yet. */
  providerKey: string | null;
  /** When the charge intent was written, and how long ago (PostgreSQL's clock); null at `started`. */
  reservation: Reservation | null;
};

const takenRow = z.object({
  recovery_point: z.enum(RECOVERY_POINTS),
  charge_id: z.string(),
  attempts: z.number().int(),
  provider_key: z.string().nullable(),
  ...reservationColumns,
});

/**
 * The CTEs that take a key over, `taken` last (after a `WITH`): an UPDATE setting a new lock
 * token and lease, one more attempt, only when the key is unfinished, for this request, and its
 * lease ran out or was released. `taken` returns the key's merchant, recovery point, guarded id
 * and attempts. The UPDATE waits on the key's row for `KEY_LOCK_WAIT_MS` at most: a row another
 * transaction holds (a completion inside its `complete` hook) is an attempt in progress, and the
 * wait fails with 55P03 (see `isKeyLockWait`). For a statement of its own: the timeout lasts
 * until its transaction ends. `also`, a further condition on the key's row (`k`).
 */
export function takeOverCtes(
  tables: Tables,
  scoped: ScopedKey & { requestHash: string; lockToken: string; leaseMs: number },
  also: FragmentSqlToken = sql.fragment`true`,
): FragmentSqlToken {
  return sql.fragment`${TAKEOVER_LOCK_WAIT} taken AS (
    UPDATE ${tables.keys} AS k
    SET lock_token = ${scoped.lockToken}::uuid,
        locked_until = ${nowPlusMs(scoped.leaseMs)},
        attempts = attempts + 1,
        updated_at = now()
    FROM lock_wait
    WHERE merchant_id = ${scoped.merchantId}
      AND operation = ${scoped.operation}
      AND key = ${scoped.key}
      AND request_hash = ${scoped.requestHash}
      AND recovery_point IN ('started', 'reserved')
      AND (lock_token IS NULL OR locked_until <= now())
      AND ${also}
    RETURNING merchant_id, recovery_point, charge_id, attempts)`;
}

const TAKEOVER_LOCK_WAIT = constantFragment(KEY_LOCK_WAIT_CTE);

/**
 * Takes over an unfinished key whose lease ran out or was released, with a new lock token
 * (fencing: the previous holder's token no longer matches, so it can write nothing more).
 * Returns null when another attempt took it first or it completed meanwhile.
 */
export async function takeOverKey(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey & { requestHash: string; lockToken: string; leaseMs: number },
): Promise<TakenKey | null> {
  const row = await db.maybeOne(sql.type(takenRow)`
    WITH ${takeOverCtes(tables, scoped)}
    SELECT t.recovery_point, t.charge_id::text AS charge_id, t.attempts, c.provider_key,
      ${reservationSelect}
    FROM taken t
    LEFT JOIN ${tables.charges} c ON c.merchant_id = t.merchant_id AND c.id = t.charge_id
  `);
  if (!row || (row.recovery_point !== 'started' && row.recovery_point !== 'reserved')) return null;
  return {
    recoveryPoint: row.recovery_point,
    chargeId: row.charge_id,
    attempts: row.attempts,
    providerKey: row.provider_key,
    reservation: toReservation(row),
  };
}
