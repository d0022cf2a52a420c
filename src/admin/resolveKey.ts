import { randomUUID } from 'node:crypto';
import type { DatabaseTransactionConnection } from 'slonik';
import { chargeBody, HTTP_STATUS } from '../engine/chargeBody.js';
import type { EngineEnv } from '../engine/engineEnv.js';
import { hookTransaction } from '../engine/hookTransaction.js';
import { leaseLost } from '../engine/leaseLost.js';
import type { ChargeOutcome } from '../engine/types.js';
import { CAPTURE, REFUND } from '../engine/movementDefinitions.js';
import { validateChargeRequest, type ChargeRequest } from '../request.js';
import type { CompletionInput } from '../store/completeKey.js';
import { completeParkedKey } from '../store/completeParkedKey.js';
import { insertAdminAction } from '../store/insertAdminAction.js';
import { withStore } from '../store/storeErrors.js';
import type { Tables } from '../store/tables.js';
import { takeParkedKey } from '../store/takeParkedKey.js';
import { KeyNotResolvableError } from './KeyNotResolvableError.js';
import { notResolvable } from './notResolvable.js';
import { refuseRecordedId } from './refuseRecordedId.js';
import { readResolveInput, type CheckedChargeResolve } from './resolveInput.js';
import { resolveMovement } from './resolveMovement.js';
import type { ResolveInput, ResolveResult } from './types.js';

/**
 * Completes a key parked in `failed` with the outcome a person found at the provider:
 * `engine.resolve`. A refund or capture key (`operation: 'refund' | 'capture'`) goes to
 * `resolveMovement`, with a refund's or capture's own outcomes; a charge's is resolved here, in
 * one transaction: the key is taken with a fresh lock token by the statement
 * that checks it is parked (so of a racing resolve, requeue or second resolve one wins and the
 * others are refused), the action is audited, the outcome is stored as the engine stores its own
 * (the same body, status and charge row), and the caller's `complete` hook (succeeded, declined)
 * or `cancel` hook (cancelled) runs after the fenced write, as in the engine's own completion.
 * The `complete` hook is told `adopted: true`: the charge was found, not made, by this call.
 * A hook that throws rolls it all back (the key stays parked) and its error passes through.
 *
 * @throws {InvalidRequestError} bad input (an outcome that is not the key's kind's, an outcome
 * without its provider id, a decline or failure code on a success, a field of another kind of
 * key, no actor or reason), or a provider charge id already recorded for another charge of the
 * merchant; nothing written.
 * @throws {KeyNotResolvableError} the key is not parked (completed, at work, missing, parked
 * before its intent, or a refund or capture that holds no reservation); nothing written.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function resolveKey(env: EngineEnv, input: ResolveInput): Promise<ResolveResult> {
  const resolution = readResolveInput(input, env.operation);
  if (resolution.kind === 'charge') return resolveCharge(env, resolution);
  return resolveMovement(env, resolution.kind === 'refund' ? REFUND : CAPTURE, resolution);
}

/** A charge's resolve: see {@link resolveKey}. */
async function resolveCharge(
  env: EngineEnv,
  resolution: CheckedChargeResolve,
): Promise<ResolveResult> {
  const { scoped } = resolution;
  const lockToken = randomUUID();
  const pool = await env.pool();
  const resolved = await withStore(() =>
    pool.transaction(async (tx) => {
      const parked = await takeParkedKey(tx, env.tables, {
        ...scoped,
        lockToken,
        leaseMs: env.leaseMs,
      });
      if (!parked) throw await notResolvable(tx, env.tables, scoped);
      if (parked.providerKey === null)
        throw new KeyNotResolvableError('no_charge_intent', 'failed');
      const request = storedRequest(scoped.key, parked.request);
      const { outcome: status, providerChargeId, declineCode } = resolution;
      const completion: CompletionInput = {
        ...scoped,
        lockToken,
        chargeStatus: status,
        providerChargeId,
        declineCode,
        responseStatus: HTTP_STATUS[status],
        responseBody: chargeBody({
          chargeId: parked.chargeId,
          status,
          request,
          providerChargeId,
          declineCode,
        }),
      };
      // Audited first, while the key is still parked: the row records the park it ends.
      const audit = await insertAdminAction(tx, env.tables, {
        ...scoped,
        lockToken,
        action: 'resolve',
        result: status,
        actor: resolution.actor,
        reason: resolution.reason,
        providerChargeId,
        declineCode,
      });
      if (!audit || !(await complete(tx, env.tables, completion))) throw leaseLost();
      const context = {
        ...scoped,
        chargeId: parked.chargeId,
        providerKey: parked.providerKey,
        request,
      };
      if (status === 'cancelled') {
        await env.hooks.cancel?.(hookTransaction(tx), context);
      } else if (providerChargeId !== null) {
        await env.hooks.complete?.(hookTransaction(tx), {
          ...context,
          status,
          providerChargeId,
          declineCode,
          adopted: true,
        });
      }
      const outcome: ChargeOutcome = {
        status,
        httpStatus: completion.responseStatus,
        body: completion.responseBody,
        replayed: false,
        chargeId: parked.chargeId,
        providerChargeId,
      };
      return { kind: 'charge' as const, outcome, audit };
    }),
  );
  // After the commit: what a person did to a parked key is reported once it holds.
  env.observer.event({
    type: 'resolved',
    ...scoped,
    resolution: resolved.outcome.status,
    by: resolution.actor,
  });
  return resolved;
}

/** The request the key was claimed with, as the sweeper reads it to finish a charge. */
function storedRequest(key: string, text: string): ChargeRequest {
  try {
    return validateChargeRequest(key, JSON.parse(text)).request;
  } catch (error) {
    throw new KeyNotResolvableError('request_unreadable', 'failed', { cause: error });
  }
}

/**
 * The fenced completion; a provider charge id the merchant already recorded for another charge
 * (the unique index refuses it) is the person's mistake, said as such.
 */
async function complete(
  tx: DatabaseTransactionConnection,
  tables: Tables,
  completion: CompletionInput,
): Promise<boolean> {
  try {
    return await completeParkedKey(tx, tables, completion);
  } catch (error) {
    refuseRecordedId('providerChargeId', error);
  }
}
