import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IdempotencyKeyInUseError } from '../../src/errors.js';
import {
  joinOrRun,
  type JoinerReport,
  type SharedAttempts,
} from '../../src/engine/sharedAttempts.js';

// Callers of one engine on one key and request share one attempt; each joiner waits no longer
// than its own waitMs, on the one timer the joiners share (timers faked: no real waiting).

type Outcome = { status: string; replayed: boolean };

function controlledAttempt() {
  let settle!: { resolve: (o: Outcome) => void; reject: (e: Error) => void };
  let runs = 0;
  const run = () => {
    runs += 1;
    return new Promise<Outcome>((resolve, reject) => (settle = { resolve, reject }));
  };
  return { run, settle: () => settle, runs: () => runs };
}

/** What the joiners were reported as, in order: `replayed:<status>` or `refused`. */
function reporter() {
  const reports: string[] = [];
  const report: JoinerReport<Outcome> = {
    replayed: (outcome) => reports.push(`replayed:${outcome.status}`),
    refused: () => reports.push('refused'),
  };
  return { report, reports };
}

const flush = () => vi.advanceTimersByTimeAsync(0);

/** What `promise` has settled to by now, or 'pending'. */
async function now(promise: Promise<unknown>): Promise<unknown> {
  const pending = Symbol('pending');
  const settled = await Promise.race([promise, flush().then(() => pending)]);
  return settled === pending ? 'pending' : settled;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('shared attempts', () => {
  it('runs once for all callers: the first gets the outcome, the others a replay of it', async () => {
    const running: SharedAttempts<Outcome> = new Map();
    const attempt = controlledAttempt();
    const { report, reports } = reporter();
    const calls = [1, 2, 3].map(() => joinOrRun(running, 'k', 1_000, attempt.run, report));
    await flush();
    attempt.settle().resolve({ status: 'succeeded', replayed: false });

    const [first, ...joiners] = await Promise.all(calls);
    expect(attempt.runs()).toBe(1);
    expect(first).toEqual({ status: 'succeeded', replayed: false });
    expect(joiners).toEqual([
      { status: 'succeeded', replayed: true },
      { status: 'succeeded', replayed: true },
    ]);
    // The joiners are reported as replays; the attempt reports itself.
    expect(reports).toEqual(['replayed:succeeded', 'replayed:succeeded']);
    expect(running.size).toBe(0);
  });

  it('answers each joiner 409 when its own wait runs out, the later ones still waiting', async () => {
    const running: SharedAttempts<Outcome> = new Map();
    const attempt = controlledAttempt();
    const { report, reports } = reporter();
    const owner = joinOrRun(running, 'k', 1_000, attempt.run, report);
    const early = joinOrRun(running, 'k', 100, attempt.run, report).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(50);
    const late = joinOrRun(running, 'k', 100, attempt.run, report).catch((e: unknown) => e);

    await vi.advanceTimersByTimeAsync(60); // 110 ms: the first joiner's wait is over
    expect(await now(early)).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(await now(late)).toBe('pending');

    attempt.settle().resolve({ status: 'declined', replayed: false });
    await expect(late).resolves.toEqual({ status: 'declined', replayed: true });
    await expect(owner).resolves.toEqual({ status: 'declined', replayed: false });
    expect(reports).toEqual(['refused', 'replayed:declined']);
  });

  it('a joiner with a shorter wait than those before it is still answered on time', async () => {
    const running: SharedAttempts<Outcome> = new Map();
    const attempt = controlledAttempt();
    const { report } = reporter();
    void joinOrRun(running, 'k', 10_000, attempt.run, report);
    const patient = joinOrRun(running, 'k', 5_000, attempt.run, report).catch((e: unknown) => e);
    const hasty = joinOrRun(running, 'k', 20, attempt.run, report).catch((e: unknown) => e);

    await vi.advanceTimersByTimeAsync(25);
    expect(await now(hasty)).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(await now(patient)).toBe('pending');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await now(patient)).toBeInstanceOf(IdempotencyKeyInUseError);
    attempt.settle().resolve({ status: 'succeeded', replayed: false });
  });

  it('when the shared attempt fails, each joiner makes its own', async () => {
    const running: SharedAttempts<Outcome> = new Map();
    const attempt = controlledAttempt();
    const { report, reports } = reporter();
    const owner = joinOrRun(running, 'k', 1_000, attempt.run, report).catch(
      (e: Error) => e.message,
    );
    const joiner = joinOrRun(running, 'k', 1_000, attempt.run, report);
    await flush();
    attempt.settle().reject(new Error('provider down'));
    await expect(owner).resolves.toBe('provider down');

    await flush();
    expect(attempt.runs()).toBe(2);
    attempt.settle().resolve({ status: 'succeeded', replayed: false });
    await expect(joiner).resolves.toEqual({ status: 'succeeded', replayed: false });
    // Its own attempt, not a replay: the attempt reports its own events.
    expect(reports).toEqual([]);
  });
});
