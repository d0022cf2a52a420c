import { IdempotencyKeyInUseError } from '../errors.js';
import { waiterPayload } from '../store/hotStatements.js';
import type { ScopedKey } from '../store/keyState.js';
import { markWaiting } from '../store/markWaiting.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from './engineEnv.js';
import { isHeldUncommitted } from './existingKey.js';

/**
 * The longest a marked waiter sleeps without a notification: a safety net. A listener that drops
 * wakes every waiter at once, so a wake-up is missed only if PostgreSQL drops a notification
 * without dropping the connection.
 */
const FALLBACK_POLL_MS = 5_000;

/**
 * The pauses between tries of a key held uncommitted: from the first, doubling up to the last.
 * Each try waits on the key's lock (`KEY_LOCK_WAIT_MS`, or the session's shorter lock timeout,
 * with one of the pool's connections), so tries back to back would keep a connection busy for
 * the whole wait; the last pause is how late a waiter may learn that the holder committed (no
 * notification can come: there was no row to mark). A pause is cut so that the next try, if it
 * takes as long as the last one did, ends when the wait does.
 */
const HELD_FIRST_PAUSE_MS = 100;
const HELD_LAST_PAUSE_MS = 400;

/**
 * `inProgress: { waitMs }`: a key another attempt holds is waited on until its outcome comes or
 * the wait runs out. On a node-postgres pool the waiter marks the key and sleeps until the
 * winner's completion wakes it (one NOTIFY in that completion, nothing else), polling only as a
 * fallback; elsewhere it polls with back-off.
 */
export async function waitInProgress<T>(
  env: EngineEnv,
  scoped: ScopedKey,
  waitMs: number,
  attempt: () => Promise<T>,
): Promise<T> {
  const deadline = env.clock.now() + waitMs;
  let pauseMs = 20;
  let heldPauseMs = HELD_FIRST_PAUSE_MS;
  for (;;) {
    const triedAt = env.clock.now();
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof IdempotencyKeyInUseError)) throw error;
      const now = env.clock.now();
      const left = deadline - now;
      if (left <= 0) {
        env.observer.event({ type: 'conflict', ...scoped, retryAfterMs: error.retryAfterMs });
        throw error;
      }
      env.observer.event({ type: 'waiting', ...scoped, leftMs: left });
      if (isHeldUncommitted(error)) {
        // Nothing to mark (the row is not visible yet) and no NOTIFY before the holder commits.
        const pause = Math.max(0, Math.min(heldPauseMs, left - (now - triedAt)));
        await new Promise((resolve) => setTimeout(resolve, pause));
        heldPauseMs = Math.min(heldPauseMs * 2, HELD_LAST_PAUSE_MS);
        continue;
      }
      const pools = await env.pools();
      if (pools.pg && pools.waiters && (await pools.waiters.listen())) {
        const { waiters, pg } = pools;
        const payload = waiterPayload(env.tables.schema, scoped);
        // Waiting registered before the mark: a completion right after it is heard.
        const wait = waiters.wait(payload, Math.min(left, FALLBACK_POLL_MS));
        try {
          const marked = await withStore(() =>
            waiters.markOnce(payload, () => markWaiting(pg, env.tables, scoped, left)),
          );
          // Not in progress any more: the outcome is there to read (or the key to take); or the
          // mark waited for the wait left and was cut short: looked at again, the wait is over.
          if (marked) await wait.woken;
        } finally {
          wait.cancel();
        }
        continue;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, left)));
      pauseMs = Math.min(pauseMs * 2, 250);
    }
  }
}
