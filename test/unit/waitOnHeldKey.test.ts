import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EngineEnv } from '../../src/engine/engineEnv.js';
import { withKeyStore } from '../../src/engine/existingKey.js';
import { waitInProgress } from '../../src/engine/waitInProgress.js';

// How a caller with `inProgress: { waitMs }` spends its wait on a key another transaction holds
// uncommitted, on fake time: each try waits on the key's lock until the holder commits or the
// lock wait runs out. What it must do: use its whole wait (a try that would meet the commit is
// not skipped), end about when the wait does, and pause between tries.

const scoped = { merchantId: 'm_1', operation: 'charge', key: 'k_1' };

/** Enough of an engine for `waitInProgress` and the 409 of a key held uncommitted. */
const env = {
  clock: { now: () => Date.now() },
  observer: { event: () => {} },
  leaseMs: 30_000,
  inProgress: { waitMs: 0 },
} as unknown as EngineEnv;

/** What PostgreSQL answers a claim whose wait on an uncommitted key was cut short. */
const lockWait = () =>
  Object.assign(new Error('canceling statement due to lock timeout'), {
    code: '55P03',
    where: 'while inserting index tuple (0,1) in relation "idempotency_keys"',
  });

/**
 * A holder that commits at `commitAt` (never, when undefined), and tries whose lock wait is cut
 * at `lockWaitMs`: each try ends at the commit (answered) or at its lock wait (a 409).
 */
function aHeldKey(lockWaitMs: number, commitAt?: number) {
  const tries: number[] = [];
  const attempt = () =>
    withKeyStore(env, scoped, async () => {
      const start = Date.now();
      tries.push(start);
      const end = Math.min(start + lockWaitMs, commitAt ?? Infinity);
      await new Promise((resolve) => setTimeout(resolve, end - start));
      if (commitAt !== undefined && Date.now() >= commitAt) return 'answered';
      throw lockWait();
    });
  return { attempt, tries };
}

async function waitOn(held: ReturnType<typeof aHeldKey>, waitMs: number) {
  const start = Date.now();
  const result = waitInProgress(env, scoped, waitMs, held.attempt).then(
    (value) => ({ value, at: Date.now() - start }),
    (error: unknown) => ({ value: error, at: Date.now() - start }),
  );
  await vi.runAllTimersAsync();
  return result;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a caller waiting on a key held uncommitted', () => {
  it('tries again when less than a lock wait is left, and so meets a commit inside its wait', async () => {
    // 200 ms: the first try ends at 115 with 85 left, and the holder commits at 150.
    const waited = await waitOn(aHeldKey(115, 150), 200);
    expect(waited).toEqual({ value: 'answered', at: 150 });
  });

  it('pauses between tries, and ends about when its wait does', async () => {
    const held = aHeldKey(115);
    const waited = await waitOn(held, 2_000);
    expect(waited.value).toMatchObject({ code: 'idempotency_key_in_use' });
    // Back to back, 2 s hold 17 tries of 115 ms; pauses of 100, 200, then 400 ms leave 6.
    expect(held.tries.length).toBeLessThanOrEqual(7);
    expect(waited.at).toBeGreaterThanOrEqual(2_000);
    expect(waited.at).toBeLessThanOrEqual(2_000 + 115);
    // Its last try started so as to end as the wait does.
    expect(held.tries.at(-1)).toBe(2_000 - 115);
  });

  it("uses its whole wait when the session's lock timeout is shorter than 100 ms", async () => {
    const waited = await waitOn(aHeldKey(20), 300);
    expect(waited.at).toBeGreaterThanOrEqual(300);
    expect(waited.at).toBeLessThanOrEqual(320);
  });
});
