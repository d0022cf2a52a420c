import { randomUUID } from 'node:crypto';
import { deriveProviderKey, type ChargeRequest } from '../request.js';
import {
  claimKey,
  claimKeyPrepared,
  type ClaimInput,
  type ClaimResult,
} from '../store/claimKey.js';
import type { KeyState, ScopedKey } from '../store/keyState.js';
import type { StorePools } from '../store/resolvePool.js';
import { takeOverKey } from '../store/takeOverKey.js';
import type { Reservation } from '../store/reservation.js';
import { chargePhase, crashPoint } from './chargePhase.js';
import type { EngineEnv } from './engineEnv.js';
import type { HeldLease } from './lease.js';
import { observePhase } from './observeCharge.js';
import { existingKey, withKeyStore } from './existingKey.js';
import { replayOf } from './outcomes.js';
import type { OperationDefinition } from './phaseMachine.js';
import { reservePhase } from './reservePhase.js';
import { runReserveHook } from './reserveHook.js';
import type { ChargeOutcome } from './types.js';

/** A charge key this attempt owns, and the recovery point it resumes at. */
export type OwnedChargeKey = {
  scoped: ScopedKey;
  lockToken: string;
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

/**
 * The charge as the phase machine runs it: the claim inserts the key and the charge intent in
 * one statement and one commit (at `reserved`; at `started` alone with `separateClaim`), through
 * group commit or a prepared statement, or in a transaction with the caller's `reserve` hook;
 * the phases are the intent (`started` → `reserved`, when it was not written with the claim),
 * then the provider and the completion (`chargePhase`).
 */
export const CHARGE: OperationDefinition<ChargeRequest, KeyState, OwnedChargeKey, ChargeOutcome> = {
  operation: (env) => env.operation,
  spanName: 'chargeonce.process_charge',
  claim: async (env, v, scoped, lockToken) => {
    const chargeId = randomUUID();
    const providerKey = deriveProviderKey(
      scoped.merchantId,
      scoped.operation,
      scoped.key,
      chargeId,
    );
    const reserve = !env.separateClaim;
    const input: ClaimInput = {
      merchantId: scoped.merchantId,
      operation: scoped.operation,
      key: scoped.key,
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
    const pools = env.readyPools ?? (await env.pools());
    const pool = pools.slonik;
    const reserveHook = reserve ? env.hooks.reserve : undefined;
    const result = await observePhase(
      env,
      'claim',
      scoped,
      () =>
        withKeyStore(
          env,
          scoped,
          (): Promise<ClaimResult | { kind: 'rejected'; outcome: ChargeOutcome }> => {
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
          },
        ),
      undefined,
      (claim) => claim.kind === 'existing' && claim.state.recoveryPoint === 'completed',
    );
    switch (result.kind) {
      case 'claimed': {
        const point = reserve ? 'reserved' : 'started';
        return {
          kind: 'claimed',
          point,
          subjectId: chargeId,
          owned: {
            scoped,
            lockToken,
            point,
            chargeId,
            providerKey,
            providerMayHaveCharged: false,
            lease: { setAt: claimSentAt },
            reservation: null,
          },
        };
      }
      case 'rejected':
        return { kind: 'response', outcome: result.outcome };
      case 'vanished':
        return { kind: 'vanished' };
      case 'existing':
        return {
          kind: 'existing',
          key: existingKey(result.state, result.state.chargeId),
          state: result.state,
          storedRequest: result.storedRequest,
        };
    }
  },
  replay: (state) => replayOf(state),
  takeOver: async (env, input, lease, _v, state, scoped) => {
    const taken = await takeOverKey(await env.pool(), env.tables, input);
    if (!taken) return null;
    return {
      from: taken.recoveryPoint,
      attempt: state.attempts + 1,
      owned: {
        scoped,
        lockToken: input.lockToken,
        point: taken.recoveryPoint,
        chargeId: taken.chargeId,
        // Stored with the intent; derived the same way when the intent is not written yet.
        providerKey:
          taken.providerKey ??
          deriveProviderKey(input.merchantId, input.operation, input.key, taken.chargeId),
        // At `started` no intent was written, so no attempt can have called the provider.
        providerMayHaveCharged: taken.recoveryPoint === 'reserved',
        lease,
        reservation: taken.reservation,
      },
    };
  },
  finish: async (env, owned, v) => {
    const charge = {
      scoped: owned.scoped,
      lockToken: owned.lockToken,
      chargeId: owned.chargeId,
      providerKey: owned.providerKey,
      providerMayHaveCharged: owned.providerMayHaveCharged,
      lease: owned.lease,
      reservation: owned.reservation,
      request: v.request,
    };
    if (owned.point === 'started') {
      const rejected = await reservePhase(env, charge);
      if (rejected) return rejected;
      // The intent was just written by this attempt: nobody called the provider before it.
      crashPoint(env, 'afterReserveCommit', owned.scoped);
      charge.providerMayHaveCharged = false;
    }
    return (await chargePhase(env, charge)).outcome;
  },
  subjectOf: (outcome) => outcome.chargeId,
};

/** How a claim without a hook goes to node-postgres: in a group commit, or alone; null: slonik. */
function fastClaim(env: EngineEnv, pools: StorePools) {
  if (pools.group) return pools.group.claim;
  const pg = pools.pg;
  return pg ? (claim: ClaimInput) => claimKeyPrepared(pg, env.tables, claim) : null;
}
