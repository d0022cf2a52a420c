import { reserveCharge, type ReserveInput } from '../store/reserveCharge.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from './engineEnv.js';
import { lostLease } from './parkKey.js';
import { releaseAfterFailure } from './releaseQuietly.js';
import { runReserveHook, type ReservingCharge } from './reserveHook.js';
import type { ChargeOutcome } from './types.js';

/**
 * Resumes a key at `started`: writes the charge intent and moves the key to `reserved`, with the
 * caller's `reserve` hook, in one transaction fenced by the lock token.
 * Returns a rejection outcome when the hook refused the charge, else null.
 *
 * @throws {IdempotencyKeyInUseError} the lease was lost; nothing was written.
 * Any other error (the hook's own, say) rolls the phase back and releases the lease.
 */
export async function reservePhase(
  env: EngineEnv,
  charge: ReservingCharge,
): Promise<ChargeOutcome | null> {
  const input: ReserveInput = {
    merchantId: charge.scoped.merchantId,
    operation: charge.scoped.operation,
    key: charge.scoped.key,
    lockToken: charge.lockToken,
    chargeId: charge.chargeId,
    providerKey: charge.providerKey,
    customerId: charge.request.customerId,
    amountMinor: charge.request.amountMinor,
    currency: charge.request.currency,
    description: charge.request.description ?? null,
    metadata: charge.request.metadata ?? null,
    authorizedOnly: charge.request.capture === false,
  };
  const pool = await env.pool();
  // Taken over meanwhile: reported (`lease_lost`), as every fenced write that finds it so.
  const lost = () =>
    lostLease(env, {
      scoped: charge.scoped,
      lockToken: charge.lockToken,
      subjectId: charge.chargeId,
    });
  try {
    return await withStore(async () => {
      if (!env.hooks.reserve) {
        if (!(await reserveCharge(pool, env.tables, input))) throw lost();
        return null;
      }
      return pool.transaction(async (tx) => {
        if (!(await reserveCharge(tx, env.tables, input))) throw lost();
        return runReserveHook(tx, env, charge);
      });
    });
  } catch (error) {
    // The phase rolled back; the key stays at `started`, claimed on its own earlier.
    await releaseAfterFailure(env, charge, error);
    throw error;
  }
}
