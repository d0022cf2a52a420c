import { randomUUID } from 'node:crypto';
import { deriveProviderKey } from '../request.js';
import {
  takeOverMovement,
  type MovementKeyState,
  type StoredMovementStatus,
} from '../store/movementStore.js';
import { existingKey } from './existingKey.js';
import type { MovementDefinition } from './movementDefinitions.js';
import { claimMovementPhase } from './movementClaim.js';
import { movementPhase, type OwnedMovement } from './movementPhase.js';
import type { MovementStatus } from './movementTypes.js';
import type { OperationDefinition } from './phaseMachine.js';

/** What a refund or capture request carries, as the phase machine needs it. */
export type MovementRequestFields = {
  merchantId: string;
  chargeId: string;
  amountMinor?: number;
  reason?: string;
};

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

/**
 * A refund or a capture as the phase machine runs it: the claim inserts the key at `reserved`
 * and reserves the movement against its charge in the same statement (a refusal is stored
 * there too); the phase asks the provider and completes, giving the reservation back.
 */
export function movementOperation(
  def: MovementDefinition,
): OperationDefinition<MovementRequestFields, MovementKeyState, OwnedMovement, MovementOutcome> {
  return {
    operation: () => def.kind,
    spanName: `chargeonce.process_${def.kind}`,
    claim: async (env, v, scoped, lockToken) => {
      const movementId = randomUUID();
      const providerKey = deriveProviderKey(
        scoped.merchantId,
        scoped.operation,
        scoped.key,
        movementId,
      );
      const reason = v.request.reason ?? null;
      const claimSentAt = env.clock.now();
      const claim = await claimMovementPhase(env, def, scoped, {
        merchantId: scoped.merchantId,
        operation: scoped.operation,
        key: scoped.key,
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
        chargeOperation: env.operation,
      });
      switch (claim.kind) {
        case 'vanished':
          return claim;
        case 'rejected':
          return { kind: 'response', outcome: claim.outcome };
        case 'existing':
          return {
            kind: 'existing',
            key: existingKey(claim.state, claim.state.movementId),
            state: claim.state,
            storedRequest: claim.storedRequest,
          };
        case 'claimed':
          return {
            kind: 'claimed',
            point: 'reserved',
            subjectId: movementId,
            owned: {
              scoped,
              lockToken,
              def,
              chargeId: v.request.chargeId,
              reason,
              lease: { setAt: claimSentAt },
              movementId,
              providerKey,
              held: claim.movement,
              reservation: null,
              providerMayHaveMoved: false,
            },
          };
      }
    },
    replay: (state, v) => replayOf(state, v.request.chargeId),
    takeOver: async (env, input, lease, v, _state, scoped) => {
      const taken = await takeOverMovement(await env.pool(), env.tables, input, env.operation);
      if (!taken) return null;
      return {
        from: 'reserved',
        attempt: taken.attempts,
        owned: {
          scoped,
          lockToken: input.lockToken,
          def,
          chargeId: v.request.chargeId,
          reason: v.request.reason ?? null,
          lease,
          movementId: taken.movementId,
          providerKey: taken.providerKey,
          held: taken.movement,
          reservation: taken.reservation,
          providerMayHaveMoved: true,
        },
      };
    },
    finish: async (env, owned) => {
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
    },
    subjectOf: (outcome) => outcome.movementId,
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
