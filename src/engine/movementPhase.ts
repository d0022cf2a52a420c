import { ChargeNeedsAttentionError } from '../errors.js';
import {
  completeMovement,
  completeMovementQuery,
  type HeldMovement,
  type MovementCompletion,
} from '../store/movementStore.js';
import { withStore } from '../store/storeErrors.js';
import { recordedElsewhere } from '../store/uniqueViolation.js';
import { askProvider, type ProviderAnswer, type WhenNotFound } from './askProvider.js';
import { crashPoint, stallPoint } from './chargePhase.js';
import type { EngineEnv } from './engineEnv.js';
import type { LeasedKey } from './lease.js';
import {
  crashBeforeCommit,
  lostLease,
  parkIfRecordedElsewhere,
  parkKey,
  parkRefusedAnswer,
  type HeldKey,
} from './parkKey.js';
import {
  checkMovementAnswer,
  MOVEMENT_HTTP_STATUS,
  type MovementContext,
  type MovementDefinition,
  type MovementResult,
} from './movementDefinitions.js';
import type { Reservation } from '../store/reservation.js';
import { hookTransaction, type HookTransaction } from './hookTransaction.js';
import { movementHooksOf } from './movementClaim.js';
import type { MovementHookContext } from './movementTypes.js';
import { observePhase, observeProvider } from './observeCharge.js';
import { releaseAfterFailure } from './releaseQuietly.js';

/** A refund or capture whose key this attempt holds, at `reserved`. */
export type OwnedMovement = LeasedKey & {
  def: MovementDefinition;
  movementId: string;
  chargeId: string;
  providerKey: string;
  reason: string | null;
  held: HeldMovement;
  /** When the movement was reserved; null when this attempt just reserved it. */
  reservation: Reservation | null;
  /** False only when no earlier attempt can have called the provider under this key. */
  providerMayHaveMoved: boolean;
};

/** The stored result of a movement, and how it came about (the sweeper counts these). */
export type MovementPhaseResult = {
  result: MovementResult;
  httpStatus: number;
  body: string;
  source: 'created' | 'adopted' | 'cancelled' | 'refused';
};

/**
 * The `reserved` phase of a refund or capture, as `chargePhase` is a charge's: a refusal is
 * stored at once (nothing was held, the provider is not asked); otherwise the provider's refund
 * or capture is adopted (an interrupted attempt made it) or made, checked against the
 * reservation, and stored with the charge's totals in one commit. A transient provider failure
 * keeps the reservation: the amount stays held until the movement is adopted or cancelled.
 *
 * @throws {ProviderUnavailableError} transient provider failure; lease released, key and
 * reservation kept, nothing stored.
 * @throws {IdempotencyKeyInUseError} the lease was lost; the attempt that took over finishes.
 */
export async function movementPhase(
  env: EngineEnv,
  owned: OwnedMovement,
  whenNotFound: WhenNotFound = 'create',
  by: 'client' | 'sweeper' = 'client',
): Promise<MovementPhaseResult> {
  const { held } = owned;
  if (held.status === 'refused') {
    return complete(env, owned, 'refused', {
      status: 'refused',
      providerMovementId: null,
      failureCode: null,
      refusal: held.refusal ?? 'refused',
      amountMinor: held.amountMinor,
      currency: held.currency,
    });
  }
  if (held.amountMinor === null || held.currency === null || held.providerChargeId === null) {
    // The claim reserves only against a succeeded charge, which has all three.
    return parkRefusedAnswer(
      env,
      heldKeyOf(owned),
      'the reserved movement lacks its amount or provider charge',
    );
  }
  const ctx: MovementContext = {
    merchantId: owned.scoped.merchantId,
    movementId: owned.movementId,
    chargeId: owned.chargeId,
    providerKey: owned.providerKey,
    reason: owned.reason,
    held: {
      status: held.status,
      refusal: held.refusal,
      amountMinor: held.amountMinor,
      currency: held.currency,
      providerChargeId: held.providerChargeId,
    },
  };
  crashPoint(env, 'beforeProviderCall', owned.scoped);
  if (env.faults) await stallPoint(env, 'beforeProviderCall', owned.scoped);
  const found = await obtain(env, owned, ctx, whenNotFound);
  if (found.kind === 'notFound') {
    const result = await complete(env, owned, 'cancelled', {
      status: 'cancelled',
      providerMovementId: null,
      failureCode: null,
      refusal: null,
      amountMinor: held.amountMinor,
      currency: held.currency,
    });
    env.observer.event({ type: 'cancelled', ...owned.scoped, chargeId: owned.movementId });
    return result;
  }
  if (found.kind === 'untrusted') {
    await parkKey(env, heldKeyOf(owned), found.reason);
    throw new ChargeNeedsAttentionError();
  }
  const checked = checkMovementAnswer(found.answer, ctx.held);
  if (!checked.ok) return parkRefusedAnswer(env, heldKeyOf(owned), checked.reason);
  if (found.adopted) {
    env.observer.event({
      type: 'adopted',
      ...owned.scoped,
      chargeId: owned.movementId,
      providerChargeId: checked.movement.id,
      by,
    });
  }
  crashPoint(env, 'afterProviderCall', owned.scoped);
  if (env.faults) await stallPoint(env, 'afterProviderCall', owned.scoped);
  const { movement } = checked;
  return complete(env, owned, found.adopted ? 'adopted' : 'created', {
    status: movement.status,
    providerMovementId: movement.id,
    failureCode: movement.failureCode,
    refusal: null,
    amountMinor: movement.amountMinor,
    currency: held.currency,
  });
}

function obtain(
  env: EngineEnv,
  owned: OwnedMovement,
  ctx: MovementContext,
  whenNotFound: WhenNotFound,
): Promise<ProviderAnswer> {
  return askProvider(env, {
    held: owned,
    subjectId: owned.movementId,
    mayHaveActed: owned.providerMayHaveMoved,
    reservation: owned.reservation,
    whenNotFound,
    find: (opts) => owned.def.find(env.provider, ctx, opts),
    create: (opts) => owned.def.create(env.provider, ctx, opts),
    observe: (call, work) => observeProvider(env, owned.scoped, call, work),
  });
}

/**
 * Stores the result, fenced, and gives the reservation back to the charge (see the SQL), with the
 * caller's `complete` (a provider answer) or `cancel` hook in the same transaction; then the
 * fenced write goes first, so a zombie's hook never runs. A refusal runs no hook.
 */
async function complete(
  env: EngineEnv,
  owned: OwnedMovement,
  source: MovementPhaseResult['source'],
  result: MovementResult,
): Promise<MovementPhaseResult> {
  const httpStatus = MOVEMENT_HTTP_STATUS[result.status];
  const body = owned.def.body(
    { movementId: owned.movementId, chargeId: owned.chargeId },
    result,
    owned.reason,
  );
  const completion: MovementCompletion = {
    merchantId: owned.scoped.merchantId,
    operation: owned.scoped.operation,
    key: owned.scoped.key,
    lockToken: owned.lockToken,
    status: result.status,
    providerMovementId: result.providerMovementId,
    failureCode: result.failureCode,
    responseStatus: httpStatus,
    responseBody: body,
    capturedMinor:
      owned.def.kind === 'capture' && result.status === 'succeeded' ? result.amountMinor : null,
  };
  const hook = hookFor(env, owned, source, result);
  if (env.faults?.shouldCrash('beforeCompleteCommit', owned.scoped)) {
    return crashBeforeCommit(env, async (tx) => {
      await tx.query(completeMovementQuery(env.tables, completion));
      if (hook) await hook(hookTransaction(tx));
    });
  }
  try {
    await write(env, owned, completion, hook);
  } catch (error) {
    // Refunds only: a capture's provider id may repeat (see uniqueViolation).
    return parkIfRecordedElsewhere(
      env,
      heldKeyOf(owned),
      error,
      'refund',
      result.providerMovementId,
    );
  }
  crashPoint(env, 'afterCompleteCommit', owned.scoped);
  return { result, httpStatus, body, source };
}

/** The fenced completion (and the hook, in its transaction): the `complete` phase. */
async function write(
  env: EngineEnv,
  owned: OwnedMovement,
  completion: MovementCompletion,
  hook: ((tx: HookTransaction) => Promise<void>) | undefined,
): Promise<void> {
  const pools = env.readyPools ?? (await env.pools());
  await observePhase(
    env,
    'complete',
    owned.scoped,
    () =>
      withStore(async () => {
        try {
          if (!hook) {
            const db = { pg: pools.pg, slonik: pools.slonik };
            if (!(await completeMovement(db, env.tables, completion))) {
              throw lostLease(env, heldKeyOf(owned));
            }
            return;
          }
          await pools.slonik.transaction(async (tx) => {
            const done = await completeMovement({ pg: null, slonik: tx }, env.tables, completion);
            if (!done) throw lostLease(env, heldKeyOf(owned));
            await hook(hookTransaction(tx));
          });
        } catch (error) {
          // The phase rolled back; the key stays `reserved`. Unlike a charge's, a movement's
          // completion also fails with the store in reach (its wait on the charge's row cut
          // short), so the lease is given back either way. A provider refund id recorded for
          // another refund keeps the lease: the caller parks the key under it.
          if (!recordedElsewhere(error, 'refund')) {
            await releaseAfterFailure(env, owned, error);
          }
          throw error;
        }
      }),
    hook !== undefined,
  );
}

/** The caller's hook for this ending of the movement, bound to its context; none for a refusal. */
function hookFor(
  env: EngineEnv,
  owned: OwnedMovement,
  source: MovementPhaseResult['source'],
  result: MovementResult,
): ((tx: HookTransaction) => Promise<void>) | undefined {
  const hooks = movementHooksOf(env, owned.def);
  const { held } = owned;
  if (result.status === 'refused' || held.amountMinor === null || held.currency === null) {
    return undefined;
  }
  const ctx: MovementHookContext = {
    merchantId: owned.scoped.merchantId,
    operation: owned.def.kind,
    key: owned.scoped.key,
    movementId: owned.movementId,
    chargeId: owned.chargeId,
    providerKey: owned.providerKey,
    amountMinor: held.amountMinor,
    currency: held.currency,
    reason: owned.reason,
  };
  if (result.status === 'cancelled') {
    const cancel = hooks.cancel;
    return cancel && ((tx) => cancel(tx, ctx));
  }
  const completeHook = hooks.complete;
  const providerMovementId = result.providerMovementId;
  if (!completeHook || providerMovementId === null) return undefined;
  return (tx) =>
    completeHook(tx, {
      merchantId: ctx.merchantId,
      operation: ctx.operation,
      key: ctx.key,
      movementId: ctx.movementId,
      chargeId: ctx.chargeId,
      providerKey: ctx.providerKey,
      amountMinor: ctx.amountMinor,
      currency: ctx.currency,
      reason: ctx.reason,
      status: result.status === 'succeeded' ? 'succeeded' : 'failed',
      providerMovementId,
      failureCode: result.failureCode,
      adopted: source === 'adopted',
    });
}

/** The movement as a held key, for parking and lease events. */
function heldKeyOf(owned: OwnedMovement): HeldKey {
  return { scoped: owned.scoped, lockToken: owned.lockToken, subjectId: owned.movementId };
}
