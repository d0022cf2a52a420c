import { randomUUID } from 'node:crypto';
import type { EngineEnv } from '../engine/engineEnv.js';
import { hookTransaction, type HookTransaction } from '../engine/hookTransaction.js';
import { leaseLost } from '../engine/leaseLost.js';
import {
  MOVEMENT_HTTP_STATUS,
  type MovementDefinition,
  type MovementResult,
} from '../engine/movementDefinitions.js';
import type { MovementHookContext } from '../engine/movementTypes.js';
import { completeParkedMovement } from '../store/completeParkedMovement.js';
import { insertAdminAction } from '../store/insertAdminAction.js';
import { withStore } from '../store/storeErrors.js';
import { takeParkedMovement, type ParkedMovement } from '../store/takeParkedMovement.js';
import { KeyNotResolvableError } from './KeyNotResolvableError.js';
import { notResolvable } from './notResolvable.js';
import { refuseRecordedId } from './refuseRecordedId.js';
import type { CheckedMovementResolve } from './resolveInput.js';
import type { ResolveResult } from './types.js';

/**
 * Completes a refund or capture key parked in `failed` with what a person found at the provider,
 * as a charge's resolve does: one transaction, the key taken with a fresh lock token by the
 * statement that checks it is parked (of a racing resolve, requeue or sweeper one wins), the
 * action audited while the key is still parked, then the fenced completion, which stores the
 * body the engine would have produced (the movement definition's, with its HTTP status) and
 * settles the charge's money columns as the engine's completion does. The caller's refund or
 * capture `complete` hook (told `adopted: true`) or `cancel` hook runs after that write, in the
 * same transaction; one that throws rolls it all back and its error passes through.
 *
 * @throws {KeyNotResolvableError} the key is not parked, or its movement holds no reservation;
 * nothing written.
 * @throws {InvalidRequestError} a provider refund id already recorded for another refund of the
 * merchant; nothing written.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function resolveMovement(
  env: EngineEnv,
  def: MovementDefinition,
  resolution: CheckedMovementResolve,
): Promise<ResolveResult> {
  const { scoped, outcome: status, providerMovementId, failureCode } = resolution;
  const lockToken = randomUUID();
  const pool = await env.pool();
  const resolved = await withStore(() =>
    pool.transaction(async (tx) => {
      const parked = await takeParkedMovement(tx, env.tables, {
        ...scoped,
        lockToken,
        leaseMs: env.leaseMs,
      });
      if (!parked) throw await notResolvable(tx, env.tables, scoped);
      const held = reservedMovement(parked, def);
      const result: MovementResult = {
        status,
        providerMovementId,
        failureCode,
        refusal: null,
        amountMinor: held.amountMinor,
        currency: held.currency,
      };
      const httpStatus = MOVEMENT_HTTP_STATUS[status];
      const body = def.body(
        { movementId: parked.movementId, chargeId: held.chargeId },
        result,
        held.reason,
      );
      // Audited first, while the key is still parked: the row records the park it ends.
      const audit = await insertAdminAction(tx, env.tables, {
        ...scoped,
        lockToken,
        action: 'resolve',
        result: status,
        actor: resolution.actor,
        reason: resolution.reason,
        providerChargeId: null,
        declineCode: null,
        providerMovementId,
        failureCode,
      });
      if (!audit) throw leaseLost();
      const done = await completeParkedMovement(tx, env.tables, {
        ...scoped,
        lockToken,
        status,
        providerMovementId,
        failureCode,
        responseStatus: httpStatus,
        responseBody: body,
      }).catch((error: unknown) => refuseRecordedId('providerRefundId', error));
      if (!done.completed) throw leaseLost();
      // The movement was read as reserved under this key's lock: settling cannot miss it.
      if (!done.settled) throw new KeyNotResolvableError('nothing_reserved', 'failed');
      const hook = hookFor(env, def, resolution, {
        merchantId: scoped.merchantId,
        operation: def.kind,
        key: scoped.key,
        movementId: parked.movementId,
        chargeId: held.chargeId,
        providerKey: held.providerKey,
        amountMinor: held.amountMinor,
        currency: held.currency,
        reason: held.reason,
      });
      if (hook) await hook(hookTransaction(tx));
      const common = { status, httpStatus, body, replayed: false, chargeId: held.chargeId };
      return def.kind === 'refund'
        ? ({
            kind: 'refund',
            outcome: {
              ...common,
              refundId: parked.movementId,
              providerRefundId: providerMovementId,
            },
            audit,
          } as const)
        : ({
            kind: 'capture',
            outcome: {
              ...common,
              captureId: parked.movementId,
              providerCaptureId: providerMovementId,
            },
            audit,
          } as const);
    }),
  );
  // After the commit: what a person did to a parked key is reported once it holds.
  env.observer.event({ type: 'resolved', ...scoped, resolution: status, by: resolution.actor });
  return resolved;
}

type HeldAmount = NonNullable<ParkedMovement['movement']> & {
  amountMinor: number;
  currency: string;
};

/**
 * The movement's reservation on its charge. A movement that holds none (refused before the
 * provider was asked, or ended) has nothing a person can settle: its key is left parked.
 */
function reservedMovement(parked: ParkedMovement, def: MovementDefinition): HeldAmount {
  const m = parked.movement;
  if (
    m === null ||
    m.kind !== def.kind ||
    m.status !== 'reserved' ||
    m.amountMinor === null ||
    m.currency === null
  ) {
    throw new KeyNotResolvableError('nothing_reserved', 'failed');
  }
  return { ...m, amountMinor: m.amountMinor, currency: m.currency };
}

/** The caller's hook for this resolution, as the engine would have run it; none if not given. */
function hookFor(
  env: EngineEnv,
  def: MovementDefinition,
  resolution: CheckedMovementResolve,
  ctx: MovementHookContext,
): ((tx: HookTransaction) => Promise<void>) | undefined {
  const hooks = env.hooks[def.kind];
  if (resolution.outcome === 'cancelled') {
    const cancel = hooks?.cancel;
    return cancel && ((tx) => cancel(tx, ctx));
  }
  const complete = hooks?.complete;
  const providerMovementId = resolution.providerMovementId;
  if (!complete || providerMovementId === null) return undefined;
  return (tx) =>
    complete(tx, {
      ...ctx,
      status: resolution.outcome === 'succeeded' ? 'succeeded' : 'failed',
      providerMovementId,
      failureCode: resolution.failureCode,
      // Found by a person, not made by this call.
      adopted: true,
    });
}
