import { randomUUID } from 'node:crypto';
import { IdempotencyKeyInUseError } from '../errors.js';
import type { ScopedKey } from '../store/keyState.js';
import { crashPoint, stallPoint } from './chargePhase.js';
import type { EngineEnv } from './engineEnv.js';
import type { HeldLease } from './lease.js';
import { examineExistingKey, withKeyStore, type ExistingKey } from './existingKey.js';
import { waitInProgress } from './waitInProgress.js';
import { joinOrRun, type SharedAttempts } from './sharedAttempts.js';
import { noteAttempt, observeOperation } from './observeCharge.js';

/** A request after validation: its key, canonical text and fingerprint. */
export type KeyedRequest<R> = { key: string; request: R; canonical: string; fingerprint: string };

/** What every outcome shares: how the engine and its telemetry read it. */
export type OperationOutcome = { status: string; httpStatus: number; replayed: boolean };

/** What an operation's claim statement found or did. */
export type ClaimRead<Owned, Outcome, State> =
  /** A new key, owned by this attempt, committed at `point` (with its reservation at `reserved`). */
  | { kind: 'claimed'; owned: Owned; point: 'started' | 'reserved'; subjectId: string }
  /** A new key that ended in the claim's own commit (a `reserve` hook rejected it). */
  | { kind: 'response'; outcome: Outcome }
  /** The key was there: `key` is what every operation reads of it, `state` the rest. */
  | { kind: 'existing'; key: ExistingKey; state: State; storedRequest: string | null }
  /** The key was there and then gone before it could be read: look again. */
  | { kind: 'vanished' };

/** What the takeover statement of every operation is given. */
export type TakeOverInput = ScopedKey & { requestHash: string; lockToken: string; leaseMs: number };

/** A key this attempt took over (fenced by its new lock token), and where it resumes. */
export type TakenOver<Owned> = {
  owned: Owned;
  from: 'started' | 'reserved';
  attempt: number;
};

/**
 * One operation (a charge, a refund, a capture) as the phase machine runs it. The machine does
 * what is the same for all: the lock token of each attempt, reading an existing key (replay, 422,
 * 409, 410, parked), taking over an abandoned one, the crash points after the claim, events,
 * lost races, waiting on a key in progress, the operation's span and metrics. The definition
 * brings its statements (the claim that reserves in the same commit, the takeover), its replay
 * and its phases from the recovery point the key is at (provider, then completion).
 */
export type OperationDefinition<R, State, Owned, Outcome extends OperationOutcome> = {
  /** The stored operation name of its keys. */
  operation(env: EngineEnv): string;
  /** The span of one call: `chargeonce.process_charge`, `chargeonce.process_refund`, … */
  spanName: string;
  claim(
    env: EngineEnv,
    v: KeyedRequest<R>,
    scoped: ScopedKey,
    lockToken: string,
  ): Promise<ClaimRead<Owned, Outcome, State>>;
  /** The stored outcome of a completed key, as a replay. */
  replay(state: State, v: KeyedRequest<R>): Outcome;
  /**
   * Takes over a resumable key with its statement (`takeOver`: a new lock token and lease, for
   * this request only) and the lease it sets; null when another attempt took the key or it
   * completed first.
   */
  takeOver(
    env: EngineEnv,
    takeOver: TakeOverInput,
    lease: HeldLease,
    v: KeyedRequest<R>,
    state: State,
    /** The call's own key object: the telemetry of the call is found by it (see observeCharge). */
    scoped: ScopedKey,
  ): Promise<TakenOver<Owned> | null>;
  /** Runs the owned key's phases, from its recovery point, to the outcome. */
  finish(env: EngineEnv, owned: Owned, v: KeyedRequest<R>): Promise<Outcome>;
  /** The id an outcome's events name (the charge's, the refund's, the capture's). */
  subjectOf(outcome: Outcome): string;
};

/** A lost race (the key vanished or was taken between two reads) is retried this many times. */
const MAX_LOST_RACES = 5;

/**
 * Runs an operation once for its key, however many times it is called: under its span, waiting
 * on a key in progress when the engine's `inProgress` policy says so (callers of this engine
 * with the same key and request share one attempt), until an attempt settles.
 */
export function processOperation<R, State, Owned, Outcome extends OperationOutcome>(
  env: EngineEnv,
  def: OperationDefinition<R, State, Owned, Outcome>,
  v: KeyedRequest<R> & { request: { merchantId: string } },
  sharedAttempts: SharedAttempts<OperationOutcome>,
): Promise<Outcome> {
  const scoped: ScopedKey = {
    merchantId: v.request.merchantId,
    operation: def.operation(env),
    key: v.key,
  };
  const policy = env.inProgress;
  if (policy === 'reject') {
    return observeOperation(env, def.spanName, scoped, () => settle(env, def, v, scoped));
  }
  return observeOperation(env, def.spanName, scoped, () =>
    joinOrRun(
      sharedAttempts as SharedAttempts<Outcome>,
      `${scoped.operation}\n${scoped.merchantId}\n${scoped.key}\n${v.fingerprint}`,
      policy.waitMs,
      () => waitInProgress(env, scoped, policy.waitMs, () => settle(env, def, v, scoped)),
      {
        // A joiner's answer is a replay of the shared attempt's outcome, or a 409: reported as
        // a caller that read the key itself would have been.
        replayed: (outcome) => reportReplay(env, def, scoped, outcome),
        refused: (error) =>
          env.observer.event({ type: 'conflict', ...scoped, retryAfterMs: error.retryAfterMs }),
      },
    ),
  );
}

/** A completed key's outcome, answered again: the `replayed` event. */
function reportReplay<Outcome extends OperationOutcome>(
  env: EngineEnv,
  def: { subjectOf(outcome: Outcome): string },
  scoped: ScopedKey,
  outcome: Outcome,
): void {
  env.observer.event({
    type: 'replayed',
    ...scoped,
    chargeId: def.subjectOf(outcome),
    status: outcome.status,
    httpStatus: outcome.httpStatus,
  });
}

/**
 * Attempts until one settles; keys that keep changing hands under us end in a 409. The first
 * attempt's promise is chained, not awaited in a loop: nearly every call settles at once, and an
 * async frame around it would cost each a promise more.
 */
function settle<R, State, Owned, Outcome extends OperationOutcome>(
  env: EngineEnv,
  def: OperationDefinition<R, State, Owned, Outcome>,
  v: KeyedRequest<R>,
  scoped: ScopedKey,
): Promise<Outcome> {
  return attempt(env, def, v, scoped).then(
    (outcome) => outcome ?? attemptAgain(env, def, v, scoped),
  );
}

/** After a lost race: the attempts left. */
async function attemptAgain<R, State, Owned, Outcome extends OperationOutcome>(
  env: EngineEnv,
  def: OperationDefinition<R, State, Owned, Outcome>,
  v: KeyedRequest<R>,
  scoped: ScopedKey,
): Promise<Outcome> {
  for (let races = 1; races < MAX_LOST_RACES; races++) {
    const outcome = await attempt(env, def, v, scoped);
    if (outcome) return outcome;
  }
  throw new IdempotencyKeyInUseError(100);
}

/**
 * One attempt: claim (or replay, refuse, take over), then the phases from the recovery point the
 * key is at, each committed with its work. Null when it lost a race and must look again.
 */
async function attempt<R, State, Owned, Outcome extends OperationOutcome>(
  env: EngineEnv,
  def: OperationDefinition<R, State, Owned, Outcome>,
  v: KeyedRequest<R>,
  scoped: ScopedKey,
): Promise<Outcome | null> {
  // A new token per attempt: it fences every write, so an attempt whose lease was taken over
  // cannot write again.
  const lockToken = randomUUID();
  const claim = await def.claim(env, v, scoped, lockToken);
  switch (claim.kind) {
    case 'vanished':
      return null;
    case 'response':
      return claim.outcome;
    case 'claimed':
      env.observer.event({
        type: 'claimed',
        ...scoped,
        chargeId: claim.subjectId,
        from: 'new',
        attempt: 1,
      });
      noteAttempt(scoped, 'new', 1);
      crashPoint(env, 'afterClaimCommit', scoped);
      // Without `separateClaim` the reservation committed with the claim.
      if (claim.point === 'reserved') crashPoint(env, 'afterReserveCommit', scoped);
      // A claim whose COMMIT was acknowledged late: the lease ran meanwhile.
      if (env.faults) await stallPoint(env, 'afterClaimCommit', scoped);
      return def.finish(env, claim.owned, v);
    case 'existing':
      break;
  }
  if (examineExistingKey(env, scoped, claim.key, claim.storedRequest, v) === 'completed') {
    // The call's span says `recovery_point: completed` for every replay (observeOperation).
    const outcome = def.replay(claim.state, v);
    reportReplay(env, def, scoped, outcome);
    return outcome;
  }
  // Read before the pool is asked for a connection: the lease is measured from here.
  const lease: HeldLease = { setAt: env.clock.now() };
  const input: TakeOverInput = {
    merchantId: scoped.merchantId,
    operation: scoped.operation,
    key: scoped.key,
    requestHash: v.fingerprint,
    lockToken,
    leaseMs: env.leaseMs,
  };
  // Its row locked past the wait: another attempt holds it (a completion in its hook, say). Any
  // lock: a second waiter of the row waits on a tuple lock, whose error names no relation.
  const taken = await withKeyStore(
    env,
    scoped,
    () => def.takeOver(env, input, lease, v, claim.state, scoped),
    true,
  );
  if (!taken) return null;
  env.observer.event({
    type: 'claimed',
    ...scoped,
    chargeId: claim.key.subjectId,
    from: taken.from,
    attempt: taken.attempt,
  });
  noteAttempt(scoped, taken.from, taken.attempt);
  if (env.faults) await stallPoint(env, 'afterClaimCommit', scoped);
  return def.finish(env, taken.owned, v);
}
