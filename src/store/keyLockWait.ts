import { isHookError } from './hookErrors.js';
import { anyCause, codeOf } from './storeErrors.js';

/**
 * How long a claim or a takeover waits on a lock before it gives up on the key: a key another
 * transaction holds uncommitted (another process's claim inside its `reserve` hook, or a commit
 * stalled on a standby) or holds locked (a completion inside its `complete` hook) is an attempt
 * in progress, and is answered as one, a 409, rather than holding the caller and one of the
 * pool's connections for as long as that transaction lasts. Two claims of one key from different
 * processes wait for each other's commit, a few milliseconds; this is well past that. A shorter
 * `lock_timeout` of the session's is kept.
 */
export const KEY_LOCK_WAIT_MS = 100;

/**
 * A CTE (`lock_wait`, with a trailing comma) that sets `lock_timeout` to the shorter of the
 * session's and `msExpression` (SQL giving milliseconds, at least 1) for the rest of its
 * transaction, and keeps the value it replaced as `was` (to put back, in a transaction that goes
 * on). Materialized, so it runs once; a statement makes its writes read from it, so it runs before
 * any of them can wait.
 */
export function lockWaitCte(msExpression: string): string {
  return `lock_wait AS MATERIALIZED (
      SELECT was, ${setShorterLockTimeout('was', msExpression)}
      FROM (SELECT current_setting('lock_timeout') AS was) AS session
    ),`;
}

/**
 * SQL that sets `lock_timeout`, for the rest of the transaction, to the shorter of `was` (the
 * session's value, SQL) and `msExpression` (milliseconds, SQL, at least 1).
 */
export function setShorterLockTimeout(was: string, msExpression: string): string {
  // A session without a lock timeout ('0', the default) takes `msExpression` as it is; only a
  // session with one of its own pays for parsing and comparing it.
  return `set_config('lock_timeout', CASE WHEN ${was} = '0' THEN (${msExpression})::text
        ELSE (extract(epoch FROM least(${was}::interval,
          (${msExpression}) * interval '1 millisecond')) * 1000)::int8::text END, true)`;
}

/** The CTE of the claims and takeovers: `KEY_LOCK_WAIT_MS` at most. */
export const KEY_LOCK_WAIT_CTE = lockWaitCte(String(KEY_LOCK_WAIT_MS));

/**
 * True when `error` is a lock wait cut short on a key of chargeonce's, not a hook's: PostgreSQL
 * names the row's relation in the error's context (`while inserting index tuple … in relation
 * "idempotency_keys"`). Only the name is matched: the rest of the context is translated with the
 * server's `lc_messages`, quotes included. A wait on anything else (a table a migration locks,
 * under a session's own `lock_timeout`) names no relation. With `anyLock`, any lock wait cut
 * short: an UPDATE queued behind another waiter of the same row waits on a tuple lock, and that
 * wait names nothing.
 */
export function isKeyLockWait(error: unknown, anyLock = false): boolean {
  if (anyCause(error, isHookError)) return false;
  return anyCause(error, (e) => {
    if (codeOf(e) !== '55P03') return false;
    const where = (e as { where?: unknown }).where;
    return anyLock || (typeof where === 'string' && KEYS_RELATION.test(where));
  });
}

/** The keys table, as a wait's context names it. */
const KEYS_RELATION = /\bidempotency_keys\b/;
