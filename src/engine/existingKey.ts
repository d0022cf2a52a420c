import {
  ChargeNeedsAttentionError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
} from '../errors.js';
import type { RecoveryPoint, ScopedKey } from '../store/keyState.js';
import { differingFields } from './requestDiff.js';
import type { EngineEnv } from './engineEnv.js';
import { retryAfterForLease } from './outcomes.js';
import { isKeyLockWait } from '../store/keyLockWait.js';
import { withStore } from '../store/storeErrors.js';

/** An existing key as a claim read it, whatever the operation. */
export type ExistingKey = {
  requestHash: string;
  recoveryPoint: RecoveryPoint;
  /** The charge (or refund, or capture) the key guards. */
  subjectId: string;
  leaseHeld: boolean;
  leaseRemainingMs: number;
};

/** The fields every operation reads of an existing key, written out (no spread: hot path). */
export function existingKey(state: Omit<ExistingKey, 'subjectId'>, subjectId: string): ExistingKey {
  return {
    requestHash: state.requestHash,
    recoveryPoint: state.recoveryPoint,
    subjectId,
    leaseHeld: state.leaseHeld,
    leaseRemainingMs: state.leaseRemainingMs,
  };
}

/**
 * What a claim that found the key already there does with it, the same for every operation:
 * `completed` (replay it) or `resumable` (take it over at its recovery point). The fingerprint
 * check comes first: a different request never learns anything of the key.
 *
 * @throws {IdempotencyKeyReusedError} the key belongs to a different request.
 * @throws {IdempotencyKeyExpiredError} the key completed and was reaped to a tombstone.
 * @throws {ChargeNeedsAttentionError} the key is parked in `failed`.
 * @throws {IdempotencyKeyInUseError} another attempt holds the key.
 */
export function examineExistingKey(
  env: EngineEnv,
  scoped: ScopedKey,
  key: ExistingKey,
  storedRequest: string | null,
  v: { fingerprint: string; canonical: string },
): 'completed' | 'resumable' {
  if (key.requestHash !== v.fingerprint) {
    const refused = reusedKeyError(storedRequest, v);
    env.observer.event({ type: 'reused', ...scoped, differingFields: refused.differingFields });
    throw refused;
  }
  if (key.recoveryPoint === 'completed') return 'completed';
  if (key.recoveryPoint === 'expired') throw new IdempotencyKeyExpiredError(key.subjectId);
  if (key.recoveryPoint === 'failed') throw new ChargeNeedsAttentionError();
  if (key.leaseHeld) {
    const retryAfterMs = retryAfterForLease(key.leaseRemainingMs);
    // A caller that waits on keys in progress is refused only when its wait runs out: the 409
    // is reported then, once (waitInProgress), not on every look at the key while it waits.
    if (env.inProgress === 'reject')
      env.observer.event({ type: 'conflict', ...scoped, retryAfterMs });
    throw new IdempotencyKeyInUseError(retryAfterMs);
  }
  return 'resumable';
}

/**
 * The 409 of a claim or takeover whose wait on the key's lock was cut short (`isKeyLockWait`):
 * another transaction holds the key, uncommitted or locked, so another attempt is in progress.
 * Its lease is not known: the retry hint is the one of a lease just taken.
 */
function keyHeldElsewhere(
  env: EngineEnv,
  scoped: ScopedKey,
  cause: unknown,
  uncommitted: boolean,
): IdempotencyKeyInUseError {
  const retryAfterMs = retryAfterForLease(env.leaseMs);
  if (env.inProgress === 'reject')
    env.observer.event({ type: 'conflict', ...scoped, retryAfterMs });
  const error = new IdempotencyKeyInUseError(retryAfterMs, { cause });
  if (uncommitted) heldUncommitted.add(error);
  return error;
}

/** The 409s of claims whose key another transaction inserted and has not committed yet. */
const heldUncommitted = new WeakSet<IdempotencyKeyInUseError>();

/**
 * True for the 409 of a claim whose key another transaction holds uncommitted (a claim inside a
 * `reserve` hook, say): no row to mark and no notification to wait for until it commits.
 */
export function isHeldUncommitted(error: IdempotencyKeyInUseError): boolean {
  return heldUncommitted.has(error);
}

/**
 * Runs one store operation of a claim or takeover (see `withStore`), a wait on the key's lock cut
 * short (`isKeyLockWait`, with `anyLock` as it says) answered as another attempt in progress.
 */
export function withKeyStore<T>(
  env: EngineEnv,
  scoped: ScopedKey,
  operation: () => Promise<T>,
  anyLock = false,
): Promise<T> {
  return withStore(operation).then(undefined, (error: unknown) => {
    // A claim waits only on the key's insert; a takeover (`anyLock`) on a key that is there.
    throw isKeyLockWait(error, anyLock) ? keyHeldElsewhere(env, scoped, error, !anyLock) : error;
  });
}

/**
 * A 422 that names the fields that differ from the stored request (the claim returned it because
 * the fingerprints differ). A tombstone keeps no request: then the refusal names none.
 */
export function reusedKeyError(
  storedRequest: string | null,
  v: { canonical: string },
): IdempotencyKeyReusedError {
  if (!storedRequest) return new IdempotencyKeyReusedError();
  try {
    const incoming = JSON.parse(v.canonical) as Record<string, unknown>;
    return new IdempotencyKeyReusedError({
      differingFields: differingFields(storedRequest, incoming),
    });
  } catch {
    return new IdempotencyKeyReusedError();
  }
}
