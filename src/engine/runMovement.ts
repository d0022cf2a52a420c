import { randomUUID } from 'node:crypto';
import { IdempotencyKeyInUseError } from '../errors.js';
import { examineExistingKey } from './existingKey.js';
import type { ValidatedMovement } from '../movementRequest.js';
import { deriveProviderKey } from '../request.js';
import {
  claimMovement,
  takeOverMovement,
  type MovementKeyState,
  type StoredMovementStatus,
} from '../store/movementStore.js';
import type { ScopedKey } from '../store/keyState.js';
import { withStore } from '../store/storeErrors.js';
import { crashPoint, stallPoint } from './chargePhase.js';
import type { EngineEnv } from './engineEnv.js';
import type { MovementDefinition } from './movementDefinitions.js';
import { movementPhase, type OwnedMovement } from './movementPhase.js';
import { waitInProgress } from './waitInProgress.js';
import type { MovementStatus } from './movementTypes.js';

/** A refund's or capture's outcome, before it is named for its kind. */
export type MovementOutcome = {
  status: MovementStatus;
  httpStatus: number;
  body: string;
  replayed: boolean;
  movementId: string;
  chargeId: string;
  providerMovementId: string | null;
};

/** A lost race (the key vanished or was taken between two reads) is retried this many times. */
const MAX_LOST_RACES = 5;

/**
 * Runs a refund or capture once for its key: claims it (reserving the movement against the
 * charge in the same commit) or reads it (replay, 422, 409, takeover), then finishes it at its
 * recovery point. The charge's machinery, with a movement's claim and provider calls.
 */
export async function runMovement(
  env: EngineEnv,
  def: MovementDefinition,
  v: ValidatedMovement<{
    merchantId: string;
    chargeId: string;
    amountMinor?: number;
    reason?: string;
  }>,
): Promise<MovementOutcome> {
  def.requireProvider(env.provider);
  const scoped: ScopedKey = { merchantId: v.request.merchantId, operation: def.kind, key: v.key };
  return env.observer.span(
    `chargeonce.process_${def.kind}`,
    { 'chargeonce.merchant_id': scoped.merchantId, 'chargeonce.operation': def.kind },
    async (span) => {
      const settle = async () => {
        for (let races = 0; races < MAX_LOST_RACES; races++) {
          const outcome = await attempt(env, def, v, scoped);
          if (outcome) return outcome;
        }
        throw new IdempotencyKeyInUseError(100);
      };
      // `inProgress: { waitMs }`: a key another attempt holds is waited on, woken by its commit.
      const policy = env.inProgress;
      const outcome =
        policy === 'reject'
          ? await settle()
          : await waitInProgress(env, scoped, policy.waitMs, settle);
      span?.setAttributes({
        'chargeonce.outcome.status': outcome.status,
        'chargeonce.replayed': outcome.replayed,
      });
      return outcome;
    },
  );
}

/** One attempt; null when it lost a race and must look again. */
async function attempt(
  env: EngineEnv,
  def: MovementDefinition,
  v: ValidatedMovement<{
    merchantId: string;
    chargeId: string;
    amountMinor?: number;
    reason?: string;
  }>,
  scoped: ScopedKey,
): Promise<MovementOutcome | null> {
  const lockToken = randomUUID();
  const movementId = randomUUID();
  const providerKey = deriveProviderKey(
    scoped.merchantId,
    scoped.operation,
    scoped.key,
    movementId,
  );
  const reason = v.request.reason ?? null;
  const claimSentAt = env.clock.now();
  const pools = await env.pools();
  const claim = await withStore(() =>
    claimMovement({ pg: pools.pg, slonik: pools.slonik }, env.tables, {
      ...scoped,
      requestHash: v.fingerprint,
      canonicalRequest: v.canonical,
      movementId,
      lockToken,
      leaseMs: env.leaseMs,
      kind: def.kind,
      chargeId: v.request.chargeId,
      amountMinor: v.request.amountMinor ?? null,
      reason,
      providerKey,
    }),
  );
  const base = { scoped, lockToken, def, chargeId: v.request.chargeId, reason };
  if (claim.kind === 'vanished') return null;
  if (claim.kind === 'claimed') {
    env.observer.event({
      type: 'claimed',
      ...scoped,
      chargeId: movementId,
      from: 'new',
      attempt: 1,
    });
    crashPoint(env, 'afterClaimCommit', scoped);
    crashPoint(env, 'afterReserveCommit', scoped);
    await stallPoint(env, 'afterClaimCommit', scoped);
    return finish(env, {
      ...base,
      lease: { setAt: claimSentAt },
      movementId,
      providerKey,
      held: claim.movement,
      reservation: null,
      providerMayHaveMoved: false,
    });
  }
  const state = claim.state;
  const found = examineExistingKey(
    env,
    scoped,
    { ...state, subjectId: state.movementId },
    claim.storedRequest,
    v,
  );
  if (found === 'completed') {
    env.observer.event({
      type: 'replayed',
      ...scoped,
      chargeId: state.movementId,
      status: replayStatus(state),
      httpStatus: state.responseStatus ?? 0,
    });
    return replayOf(state, v.request.chargeId);
  }
  const takeOverSentAt = env.clock.now();
  const taken = await withStore(async () =>
    takeOverMovement(await env.pool(), env.tables, {
      ...scoped,
      requestHash: v.fingerprint,
      lockToken,
      leaseMs: env.leaseMs,
    }),
  );
  if (!taken) return null;
  env.observer.event({
    type: 'claimed',
    ...scoped,
    chargeId: taken.movementId,
    from: 'reserved',
    attempt: taken.attempts,
  });
  await stallPoint(env, 'afterClaimCommit', scoped);
  return finish(env, {
    ...base,
    lease: { setAt: takeOverSentAt },
    movementId: taken.movementId,
    providerKey: taken.providerKey,
    held: taken.movement,
    reservation: taken.reservation,
    providerMayHaveMoved: true,
  });
}

async function finish(env: EngineEnv, owned: OwnedMovement): Promise<MovementOutcome> {
  const done = await movementPhase(env, owned);
  return {
    status: done.result.status,
    httpStatus: done.httpStatus,
    body: done.body,
    replayed: false,
    movementId: owned.movementId,
    chargeId: owned.chargeId,
    providerMovementId: done.result.providerMovementId,
  };
}

function replayOf(state: MovementKeyState, chargeId: string): MovementOutcome {
  if (state.responseStatus === null || state.responseBody === null) {
    throw new Error('A completed key has no stored response.');
  }
  return {
    status: replayStatus(state),
    httpStatus: state.responseStatus,
    body: state.responseBody,
    replayed: true,
    movementId: state.movementId,
    chargeId,
    providerMovementId: state.providerMovementId,
  };
}

function replayStatus(state: MovementKeyState): MovementStatus {
  const stored: StoredMovementStatus | null = state.movementStatus;
  if (stored && stored !== 'reserved') return stored;
  // A completed key always has a final movement; fall back on the stored status code.
  return state.responseStatus === 201 ? 'succeeded' : 'failed';
}
