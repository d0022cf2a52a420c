import { randomUUID } from 'node:crypto';
import { examineExistingKey } from './existingKey.js';
import { deriveProviderKey, type ValidatedRequest } from '../request.js';
import { claimKey, claimKeyPrepared, type ClaimInput } from '../store/claimKey.js';
import type { StorePools } from '../store/resolvePool.js';
import type { ScopedKey } from '../store/keyState.js';
import { withStore } from '../store/storeErrors.js';
import { takeOverKey } from '../store/takeOverKey.js';
import type { EngineEnv } from './engineEnv.js';
import type { HeldLease } from './lease.js';
import type { Reservation } from '../store/reservation.js';
import { observePhase } from './observeCharge.js';
import { replayOf } from './outcomes.js';
import { runReserveHook } from './reserveHook.js';
import type { ChargeOutcome } from './types.js';

/** This attempt owns the key and resumes at `point`. */
export type OwnedKey = {
  point: 'started' | 'reserved';
  chargeId: string;
  providerKey: string;
  /** False only when no earlier attempt can have called the provider under this key. */
  providerMayHaveCharged: boolean;
  /** The lease this attempt now holds. */
  lease: HeldLease;
  /** When the charge intent was written; null when this attempt writes it. */
  reservation: Reservation | null;
};

/** What the claim phase decided. */
export type ClaimStep =
  | { kind: 'owned'; owned: OwnedKey; fresh: boolean }
  | { kind: 'response'; outcome: ChargeOutcome }
  | { kind: 'lostRace' };

/**
 * Claims a new key (and reserves its charge in the same commit), or reads the existing one:
 * replays it, refuses it, or takes it over when its lease ran out.
 *
 * @throws {IdempotencyKeyReusedError} the key belongs to a different request.
 * @throws {IdempotencyKeyInUseError} another attempt holds the key.
 * @throws {IdempotencyKeyExpiredError} the key completed and was reaped to a tombstone.
 * @throws {ChargeNeedsAttentionError} the key is parked in `failed`.
 */
export async function claimPhase(
  env: EngineEnv,
  v: ValidatedRequest,
  scoped: ScopedKey,
  lockToken: string,
): Promise<ClaimStep> {
  const chargeId = randomUUID();
  const providerKey = deriveProviderKey(scoped.merchantId, scoped.operation, scoped.key, chargeId);
  const reserve = !env.separateClaim;
  const input: ClaimInput = {
    ...scoped,
    reserve,
    requestHash: v.fingerprint,
    canonicalRequest: v.canonical,
    chargeId,
    providerKey,
    lockToken,
    leaseMs: env.leaseMs,
    customerId: v.request.customerId,
    amountMinor: v.request.amountMinor,
    currency: v.request.currency,
    description: v.request.description ?? null,
    metadata: v.request.metadata ?? null,
    authorizedOnly: v.request.capture === false,
  };
  // Read before the pool is even asked for a connection: the lease is measured from here.
  const claimSentAt = env.clock.now();
  const pools = await env.pools();
  const pool = pools.slonik;
  const reserveHook = reserve ? env.hooks.reserve : undefined;
  const result = await observePhase(env, 'claim', scoped, () =>
    withStore(async () => {
      if (!reserveHook) return claimKey(pool, env.tables, input, fastClaim(env, pools));
      // With a hook the claim, the intent and the caller's SQL share one explicit transaction.
      return pool.transaction(async (tx) => {
        const claim = await claimKey(tx, env.tables, input);
        if (claim.kind !== 'claimed') return claim;
        const rejected = await runReserveHook(tx, env, {
          scoped,
          lockToken,
          chargeId,
          providerKey,
          request: v.request,
        });
        return rejected ? { kind: 'rejected' as const, outcome: rejected } : claim;
      });
    }),
  );

  switch (result.kind) {
    case 'claimed':
      env.observer.event({ type: 'claimed', ...scoped, chargeId, from: 'new', attempt: 1 });
      env.observer.annotate({ 'chargeonce.recovery_point': 'new', 'chargeonce.attempt': 1 });
      return {
        kind: 'owned',
        fresh: true,
        owned: {
          point: reserve ? 'reserved' : 'started',
          chargeId,
          providerKey,
          providerMayHaveCharged: false,
          lease: { setAt: claimSentAt },
          reservation: null,
        },
      };
    case 'rejected':
      return { kind: 'response', outcome: result.outcome };
    case 'vanished':
      return { kind: 'lostRace' };
    case 'existing':
      break;
  }

  const state = result.state;
  const found = examineExistingKey(
    env,
    scoped,
    { ...state, subjectId: state.chargeId },
    result.storedRequest,
    v,
  );
  if (found === 'completed') {
    const outcome = replayOf(state);
    env.observer.annotate({ 'chargeonce.recovery_point': 'completed' });
    env.observer.event({
      type: 'replayed',
      ...scoped,
      chargeId: outcome.chargeId,
      status: outcome.status,
      httpStatus: outcome.httpStatus,
    });
    return { kind: 'response', outcome };
  }
  const takeOverSentAt = env.clock.now();
  const taken = await withStore(() =>
    takeOverKey(pool, env.tables, {
      ...scoped,
      requestHash: v.fingerprint,
      lockToken,
      leaseMs: env.leaseMs,
    }),
  );
  if (!taken) return { kind: 'lostRace' };
  env.observer.event({
    type: 'claimed',
    ...scoped,
    chargeId: taken.chargeId,
    from: taken.recoveryPoint,
    attempt: state.attempts + 1,
  });
  env.observer.annotate({
    'chargeonce.recovery_point': taken.recoveryPoint,
    'chargeonce.attempt': state.attempts + 1,
  });
  return {
    kind: 'owned',
    fresh: false,
    owned: {
      point: taken.recoveryPoint,
      chargeId: taken.chargeId,
      // Stored with the intent; derived the same way when the intent is not written yet.
      providerKey:
        taken.providerKey ??
        deriveProviderKey(scoped.merchantId, scoped.operation, scoped.key, taken.chargeId),
      // At `started` no intent was written, so no attempt can have called the provider.
      providerMayHaveCharged: taken.recoveryPoint === 'reserved',
      lease: { setAt: takeOverSentAt },
      reservation: taken.reservation,
    },
  };
}

/** How a claim without a hook goes to node-postgres: in a group commit, or alone; null: slonik. */
function fastClaim(env: EngineEnv, pools: StorePools) {
  if (pools.group) return pools.group.claim;
  const pg = pools.pg;
  return pg ? (claim: ClaimInput) => claimKeyPrepared(pg, env.tables, claim) : null;
}
