import type { DatabaseTransactionConnection } from 'slonik';
import { hookTransaction } from './hookTransaction.js';
import { ChargeRejectedError } from '../errors.js';
import type { ChargeRequest } from '../request.js';
import { completeKey } from '../store/completeKey.js';
import type { ScopedKey } from '../store/keyState.js';
import type { EngineEnv } from './engineEnv.js';
import type { ChargeOutcome } from './types.js';

/** A charge being reserved by the attempt that holds its key. */
export type ReservingCharge = {
  scoped: ScopedKey;
  lockToken: string;
  chargeId: string;
  providerKey: string;
  request: ChargeRequest;
};

/**
 * What every charge hook is told about the charge (`complete` hooks get its outcome besides).
 * Written out, not spread: see the rule on object literals in src/engine.
 */
export function hookContext(charge: Omit<ReservingCharge, 'lockToken'>) {
  return {
    merchantId: charge.scoped.merchantId,
    operation: charge.scoped.operation,
    key: charge.scoped.key,
    chargeId: charge.chargeId,
    providerKey: charge.providerKey,
    request: charge.request,
  };
}

/**
 * Runs the caller's `reserve` hook inside the reserve transaction, under a savepoint. A
 * `ChargeRejectedError` undoes only the hook's writes and stores the rejection as the key's
 * terminal outcome in the same transaction; any other error propagates and rolls it all back.
 * Returns the rejection outcome, or null when the hook accepted the charge.
 */
export async function runReserveHook(
  tx: DatabaseTransactionConnection,
  env: EngineEnv,
  charge: ReservingCharge,
): Promise<ChargeOutcome | null> {
  const hook = env.hooks.reserve;
  if (!hook) return null;
  try {
    await tx.transaction(async (savepoint) => {
      await hook(hookTransaction(savepoint), hookContext(charge));
    });
    return null;
  } catch (error) {
    if (!(error instanceof ChargeRejectedError)) throw error;
    await completeKey(tx, env.tables, {
      merchantId: charge.scoped.merchantId,
      operation: charge.scoped.operation,
      key: charge.scoped.key,
      lockToken: charge.lockToken,
      chargeStatus: 'rejected',
      providerChargeId: null,
      declineCode: null,
      responseStatus: error.status,
      responseBody: error.body,
    });
    return {
      status: 'rejected',
      httpStatus: error.status,
      body: error.body,
      replayed: false,
      chargeId: charge.chargeId,
      providerChargeId: null,
    };
  }
}
