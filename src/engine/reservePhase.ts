import { reserveCharge, type ReserveInput } from '../store/reserveCharge.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from './engineEnv.js';
import { leaseLost } from './leaseLost.js';
import { runReserveHook, type ReservingCharge } from './reserveHook.js';
import type { ChargeOutcome } from './types.js';

/**
 * Resumes a key at `started`: writes the charge intent and moves the key to `reserved`, with the
 * caller's `reserve` hook, in one transaction fenced by the lock token.
 * Returns a rejection outcome when the hook refused the charge, else null.
 *
 * @throws {IdempotencyKeyInUseError} the lease was lost; nothing was written.
 */
export async function reservePhase(
  env: EngineEnv,
  charge: ReservingCharge,
): Promise<ChargeOutcome | null> {
  const input: ReserveInput = {
    ...charge.scoped,
    lockToken: charge.lockToken,
    chargeId: charge.chargeId,
    providerKey: charge.providerKey,
    customerId: charge.request.customerId,
    amountMinor: charge.request.amountMinor,
    currency: charge.request.currency,
    description: charge.request.description ?? null,
    metadata: charge.request.metadata ?? null,
  };
  const pool = await env.pool();
  return withStore(async () => {
    if (!env.hooks.reserve) {
      if (!(await reserveCharge(pool, env.tables, input))) throw leaseLost();
      return null;
    }
    return pool.transaction(async (tx) => {
      if (!(await reserveCharge(tx, env.tables, input))) throw leaseLost();
      return runReserveHook(tx, env, charge);
    });
  });
}
