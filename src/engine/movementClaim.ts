import type { ScopedKey } from '../store/keyState.js';
import { ChargeRejectedError } from '../errors.js';
import {
  claimMovement,
  completeMovementQuery,
  type MovementClaim,
  type MovementClaimInput,
} from '../store/movementStore.js';
import type { EngineEnv } from './engineEnv.js';
import { withKeyStore } from './existingKey.js';
import { hookTransaction } from './hookTransaction.js';
import type { MovementDefinition } from './movementDefinitions.js';
import type { MovementHookContext, MovementHooks } from './movementTypes.js';
import { observePhase } from './observeCharge.js';

/** A claim whose `reserve` hook rejected the movement: stored `refused` in the same commit. */
export type RejectedMovement = {
  kind: 'rejected';
  outcome: {
    status: 'refused';
    httpStatus: number;
    body: string;
    replayed: false;
    movementId: string;
    chargeId: string;
    providerMovementId: null;
  };
};

/** The hooks of one kind of movement, if the caller gave any. */
export function movementHooksOf(env: EngineEnv, def: MovementDefinition): MovementHooks {
  return env.hooks[def.kind] ?? {};
}

/**
 * Claims a refund or capture key and reserves the amount on the charge (one statement, see
 * `claimMovement`). With a `reserve` hook, the claim and the caller's SQL share one transaction:
 * the hook runs under a savepoint once the amount is held, and a `ChargeRejectedError` from it
 * undoes the hook's writes and ends the movement `refused` with the hook's response, the
 * reservation given back, in the same commit. A refusal of chargeonce's runs no hook. A key
 * another transaction holds is a 409, as for a charge (`withKeyStore`).
 */
export async function claimMovementPhase(
  env: EngineEnv,
  def: MovementDefinition,
  scoped: ScopedKey,
  input: MovementClaimInput,
): Promise<MovementClaim | RejectedMovement> {
  const pools = env.readyPools ?? (await env.pools());
  const hook = movementHooksOf(env, def).reserve;
  return observePhase(
    env,
    'claim',
    scoped,
    () =>
      withKeyStore(env, scoped, async () => {
        if (!hook) return claimMovement({ pg: pools.pg, slonik: pools.slonik }, env.tables, input);
        return pools.slonik.transaction(async (tx) => {
          const claim = await claimMovement({ pg: null, slonik: tx }, env.tables, input);
          if (claim.kind !== 'claimed' || claim.movement.status !== 'reserved') return claim;
          const { amountMinor, currency } = claim.movement;
          const ctx: MovementHookContext = {
            merchantId: input.merchantId,
            operation: def.kind,
            key: input.key,
            movementId: input.movementId,
            chargeId: input.chargeId,
            providerKey: input.providerKey,
            // A reserved movement always has both (the claim read them from the charge).
            amountMinor: amountMinor ?? 0,
            currency: currency ?? '',
            reason: input.reason,
          };
          try {
            await tx.transaction(async (savepoint) => hook(hookTransaction(savepoint), ctx));
            return claim;
          } catch (error) {
            if (!(error instanceof ChargeRejectedError)) throw error;
            await tx.query(
              completeMovementQuery(env.tables, {
                merchantId: scoped.merchantId,
                operation: scoped.operation,
                key: scoped.key,
                lockToken: input.lockToken,
                status: 'refused',
                refusal: 'rejected',
                providerMovementId: null,
                failureCode: null,
                responseStatus: error.status,
                responseBody: error.body,
                capturedMinor: null,
              }),
            );
            return {
              kind: 'rejected' as const,
              outcome: {
                status: 'refused' as const,
                httpStatus: error.status,
                body: error.body,
                replayed: false as const,
                movementId: input.movementId,
                chargeId: input.chargeId,
                providerMovementId: null,
              },
            };
          }
        });
      }),
    hook !== undefined,
    (claim) => claim.kind === 'existing' && claim.state.recoveryPoint === 'completed',
  );
}
