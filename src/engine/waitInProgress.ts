import { IdempotencyKeyInUseError } from '../errors.js';
import { waiterPayload } from '../store/hotStatements.js';
import type { ScopedKey } from '../store/keyState.js';
import { markWaiting } from '../store/markWaiting.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from './engineEnv.js';

/**
 * The longest a marked waiter sleeps without a notification: a safety net. A listener that drops
 * wakes every waiter at once, so a wake-up is missed only if PostgreSQL drops a notification
 * without dropping the connection.
 */
const FALLBACK_POLL_MS = 5_000;

/** What a joiner that ran out of time suggests: the shared attempt is still at work. */
const JOINER_RETRY_AFTER_MS = 1_000;

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
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const left = deadline - env.clock.now();
      if (!(error instanceof IdempotencyKeyInUseError) || left <= 0) throw error;
      const pools = await env.pools();
      if (pools.waiters && (await pools.waiters.listen())) {
        const { waiters } = pools;
        const payload = waiterPayload(env.tables.schema, scoped);
        // Waiting registered before the mark: a completion right after it is heard.
        const wait = waiters.wait(payload, Math.min(left, FALLBACK_POLL_MS));
        try {
          const marked = await withStore(() =>
            waiters.markOnce(payload, () => markWaiting(pools.slonik, env.tables, scoped)),
          );
          // Not in progress any more: the outcome is there to read (or the key to take).
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

/**
 * Callers of one engine that wait on the same key with the same request share one attempt: the
 * first runs it, the others wait for its outcome and get it as a replay (the same body), woken
 * when it settles — the in-process side of waking on commit, so a storm of callers costs one
 * claim, not one each. If the shared attempt fails, each waiter makes its own.
 */
export async function joinOrRun<T extends { replayed: boolean }>(
  running: Map<string, Promise<T>>,
  id: string,
  waitMs: number,
  run: () => Promise<T>,
): Promise<T> {
  const shared = running.get(id);
  if (shared) {
    // A joiner waits no longer than its own `waitMs`, as it would on a key held elsewhere.
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<'outOfTime'>((resolve) => {
      timer = setTimeout(() => resolve('outOfTime'), waitMs);
    });
    const outcome = await Promise.race([shared.catch(() => null), outOfTime]);
    clearTimeout(timer);
    if (outcome === 'outOfTime') throw new IdempotencyKeyInUseError(JOINER_RETRY_AFTER_MS);
    if (outcome) {
      // A copy, then the flag: `{ ...outcome, replayed }` would build a new hidden class.
      const replay = { ...outcome };
      replay.replayed = true;
      return replay;
    }
  }
  const mine = run();
  running.set(id, mine);
  try {
    return await mine;
  } finally {
    if (running.get(id) === mine) running.delete(id);
  }
}
