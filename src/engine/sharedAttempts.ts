import { IdempotencyKeyInUseError } from '../errors.js';

/** What a joiner that ran out of time suggests: the shared attempt is still at work. */
const JOINER_RETRY_AFTER_MS = 1_000;

/** A joiner's answer when its own wait ran out first. */
const OUT_OF_TIME = Symbol('outOfTime');

/** A caller waiting on another's attempt: until `deadline` (`performance.now()`), at most. */
type Joiner<T> = { deadline: number; answer: (outcome: T | null | typeof OUT_OF_TIME) => void };

/**
 * An attempt callers of one engine share, and the callers waiting on it, with one timer for all
 * of them (set for the earliest deadline): in a storm, a joiner costs a promise and an entry
 * here, not a timer, a race and a promise for each.
 */
export type SharedAttempt<T> = {
  joiners: Joiner<T>[];
  timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is set for. */
  timerAt: number;
};

/** The attempts running in one engine, by key, operation and request (see `joinOrRun`). */
export type SharedAttempts<T> = Map<string, SharedAttempt<T>>;

/**
 * What a joiner's answer is reported as: the shared attempt's outcome, replayed to it, or the 409
 * it gets when its wait ran out. The attempt reports its own events; a joiner makes none.
 */
export type JoinerReport<T> = {
  replayed(outcome: T): void;
  refused(error: IdempotencyKeyInUseError): void;
};

/**
 * Callers of one engine that wait on the same key with the same request share one attempt: the
 * first runs it, the others wait for its outcome and get it as a replay (the same body), answered
 * when it settles (the in-process side of waking on commit, so a storm of callers costs one
 * claim, not one each). A joiner waits no longer than its own `waitMs`, as it would on a key held
 * elsewhere, then gets a 409. If the shared attempt fails, each joiner makes its own.
 */
export async function joinOrRun<T extends { replayed: boolean }>(
  running: SharedAttempts<T>,
  id: string,
  waitMs: number,
  run: () => Promise<T>,
  report: JoinerReport<T>,
): Promise<T> {
  const shared = running.get(id);
  if (shared) {
    const outcome = await join(shared, waitMs);
    if (outcome === OUT_OF_TIME) {
      const refused = new IdempotencyKeyInUseError(JOINER_RETRY_AFTER_MS);
      report.refused(refused);
      throw refused;
    }
    if (outcome) {
      // A copy, then the flag: `{ ...outcome, replayed }` would build a new hidden class.
      const replay = { ...outcome };
      replay.replayed = true;
      report.replayed(replay);
      return replay;
    }
  }
  const mine: SharedAttempt<T> = { joiners: [], timer: undefined, timerAt: Infinity };
  running.set(id, mine);
  try {
    const outcome = await run();
    answerAll(mine, outcome);
    return outcome;
  } catch (error) {
    answerAll(mine, null);
    throw error;
  } finally {
    if (running.get(id) === mine) running.delete(id);
  }
}

function join<T>(shared: SharedAttempt<T>, waitMs: number): Promise<T | null | typeof OUT_OF_TIME> {
  return new Promise((answer) => {
    const deadline = performance.now() + waitMs;
    shared.joiners.push({ deadline, answer });
    if (deadline < shared.timerAt) setTimer(shared, deadline);
  });
}

/** Sets the joiners' one timer for `deadline`, replacing a later one. */
function setTimer<T>(shared: SharedAttempt<T>, deadline: number): void {
  clearTimeout(shared.timer);
  shared.timerAt = deadline;
  const inMs = Math.max(1, Math.ceil(deadline - performance.now()));
  shared.timer = setTimeout(() => expire(shared), inMs);
}

/** Answers the joiners whose wait ran out, and sets the timer for the next deadline. */
function expire<T>(shared: SharedAttempt<T>): void {
  shared.timer = undefined;
  shared.timerAt = Infinity;
  const now = performance.now();
  const waiting: Joiner<T>[] = [];
  let next = Infinity;
  for (const joiner of shared.joiners) {
    if (joiner.deadline <= now) {
      joiner.answer(OUT_OF_TIME);
    } else {
      waiting.push(joiner);
      next = Math.min(next, joiner.deadline);
    }
  }
  shared.joiners = waiting;
  if (next !== Infinity) setTimer(shared, next);
}

/** The attempt settled: every joiner gets its outcome (null when it failed). */
function answerAll<T>(shared: SharedAttempt<T>, outcome: T | null): void {
  clearTimeout(shared.timer);
  shared.timer = undefined;
  shared.timerAt = Infinity;
  for (const joiner of shared.joiners) joiner.answer(outcome);
  shared.joiners = [];
}
