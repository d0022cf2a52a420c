import type { DatabasePool } from 'slonik';
import { hookContext } from './reserveHook.js';
import { hookTransaction, type HookTransaction } from './hookTransaction.js';
import { ChargeNeedsAttentionError, SimulatedCrashError } from '../errors.js';
import type { CreateChargeInput } from '../provider/PaymentProvider.js';
import type { ChargeRequest } from '../request.js';
import { completeKey, completeKeyPrepared, type CompletionInput } from '../store/completeKey.js';
import type { Reservation } from '../store/reservation.js';
import type { StorePools } from '../store/resolvePool.js';
import type { ScopedKey } from '../store/keyState.js';
import { withStore } from '../store/storeErrors.js';
import { recordedElsewhere } from '../store/uniqueViolation.js';
import { askProvider, type ProviderAnswer, type WhenNotFound } from './askProvider.js';
import { chargeBody, HTTP_STATUS } from './chargeBody.js';
import { checkProviderAnswer } from './checkProviderAnswer.js';
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
import { noteAdopted, observePhase, observeProvider } from './observeCharge.js';
import { releaseAfterFailure } from './releaseQuietly.js';
import type { ChargeOutcome, CrashPoint } from './types.js';

/** A charge whose key this attempt holds, at `reserved`. */
export type OwnedCharge = LeasedKey & {
  chargeId: string;
  /** When the charge intent was written and how long ago; null when this attempt just wrote it. */
  reservation: Reservation | null;
  providerKey: string;
  request: ChargeRequest;
  /** False only when no earlier attempt can have called the provider under this key. */
  providerMayHaveCharged: boolean;
};

export type { WhenNotFound } from './askProvider.js';

/** The outcome, and how it came about (the recovery worker counts these). */
export type ChargePhaseResult = {
  outcome: ChargeOutcome;
  source: 'created' | 'adopted' | 'cancelled';
};

/** Throws `SimulatedCrashError` when the fault injector says this attempt dies at `point`. */
export function crashPoint(env: EngineEnv, point: CrashPoint, scoped: ScopedKey): void {
  if (env.faults?.shouldCrash(point, scoped)) throw new SimulatedCrashError(point);
}

/**
 * What holds the attempt at `point` while the fault injector stalls it (tests and chaos only);
 * undefined when nothing does. Callers write `if (env.faults) await stallPoint(...)`: without an
 * injector a charge then spends no promise and no turn of the microtask queue on its stall points.
 */
export function stallPoint(
  env: EngineEnv,
  point: CrashPoint,
  scoped: ScopedKey,
): Promise<void> | undefined {
  return env.faults?.stall?.(point, scoped) ?? undefined;
}

/**
 * The `reserved` phase: gets the provider's charge (adopting one an interrupted attempt made, or
 * making it), then records it and the response and completes the key in one commit.
 *
 * @throws {ProviderUnavailableError} transient provider failure; lease released, key stays at
 * `reserved`, nothing stored.
 * @throws {IdempotencyKeyInUseError} the lease was lost; the attempt that took over finishes.
 */
export async function chargePhase(
  env: EngineEnv,
  charge: OwnedCharge,
  whenNotFound: WhenNotFound = 'create',
  by: 'client' | 'sweeper' = 'client',
): Promise<ChargePhaseResult> {
  crashPoint(env, 'beforeProviderCall', charge.scoped);
  if (env.faults) await stallPoint(env, 'beforeProviderCall', charge.scoped);
  const found = await obtainProviderCharge(env, charge, whenNotFound);
  if (found.kind === 'notFound') return cancelCharge(env, charge);
  if (found.kind === 'untrusted') {
    await parkKey(env, heldKeyOf(charge), found.reason);
    throw new ChargeNeedsAttentionError();
  }
  const checked = checkProviderAnswer(found.answer, charge.request);
  if (!checked.ok) return parkRefusedAnswer(env, heldKeyOf(charge), checked.reason);
  const providerCharge = checked.charge;
  const { adopted } = found;
  noteAdopted(charge.scoped, adopted);
  if (adopted) {
    env.observer.event({
      type: 'adopted',
      ...charge.scoped,
      chargeId: charge.chargeId,
      providerChargeId: providerCharge.id,
      by,
    });
  }
  crashPoint(env, 'afterProviderCall', charge.scoped);
  if (env.faults) await stallPoint(env, 'afterProviderCall', charge.scoped);

  const declineCode =
    providerCharge.status === 'declined' ? (providerCharge.declineCode ?? null) : null;
  const completion = terminal(charge, providerCharge.status, providerCharge.id, declineCode);
  const completeHook = env.hooks.complete;
  try {
    await writeTerminal(
      env,
      charge,
      completion,
      completeHook &&
        ((tx) =>
          completeHook(
            tx,
            Object.assign(hookContext(charge), {
              status: providerCharge.status,
              providerChargeId: providerCharge.id,
              declineCode,
              adopted,
            }),
          )),
    );
  } catch (error) {
    return parkIfRecordedElsewhere(env, heldKeyOf(charge), error, 'charge', providerCharge.id);
  }
  crashPoint(env, 'afterCompleteCommit', charge.scoped);
  return { outcome: outcomeOf(charge, completion), source: adopted ? 'adopted' : 'created' };
}

/**
 * Ends a charge the provider never made: a terminal `cancelled` outcome (410, replayed to any
 * later retry) and the caller's `cancel` hook to release the reservation, in one commit.
 */
async function cancelCharge(env: EngineEnv, charge: OwnedCharge): Promise<ChargePhaseResult> {
  const completion = terminal(charge, 'cancelled', null, null);
  const cancelHook = env.hooks.cancel;
  await writeTerminal(
    env,
    charge,
    completion,
    cancelHook && ((tx) => cancelHook(tx, hookContext(charge))),
  );
  env.observer.event({ type: 'cancelled', ...charge.scoped, chargeId: charge.chargeId });
  return { outcome: outcomeOf(charge, completion), source: 'cancelled' };
}

function terminal(
  charge: OwnedCharge,
  status: 'succeeded' | 'declined' | 'cancelled',
  providerChargeId: string | null,
  declineCode: string | null,
): CompletionInput {
  return {
    merchantId: charge.scoped.merchantId,
    operation: charge.scoped.operation,
    key: charge.scoped.key,
    lockToken: charge.lockToken,
    chargeStatus: status,
    providerChargeId,
    declineCode,
    responseStatus: HTTP_STATUS[status],
    responseBody: chargeBody({
      chargeId: charge.chargeId,
      status,
      request: charge.request,
      providerChargeId,
      declineCode,
    }),
  };
}

function outcomeOf(charge: OwnedCharge, completion: CompletionInput): ChargeOutcome {
  return {
    status: completion.chargeStatus,
    httpStatus: completion.responseStatus,
    body: completion.responseBody,
    replayed: false,
    chargeId: charge.chargeId,
    providerChargeId: completion.providerChargeId,
  };
}

/**
 * Writes a terminal outcome, fenced by the lock token, with the caller's hook in the same
 * transaction when there is one (then the fenced write goes first: a zombie's hook never runs).
 */
async function writeTerminal(
  env: EngineEnv,
  charge: OwnedCharge,
  completion: CompletionInput,
  hook: ((tx: HookTransaction) => Promise<void>) | undefined,
): Promise<void> {
  const pools = env.readyPools ?? (await env.pools());
  if (env.faults?.shouldCrash('beforeCompleteCommit', charge.scoped)) {
    return crashBeforeCommit(env, async (tx) => {
      await completeKey(tx, env.tables, completion);
      if (hook) await hook(hookTransaction(tx));
    });
  }
  await observePhase(env, 'complete', charge.scoped, () =>
    withStore(() =>
      hook
        ? completeWithHook(env, pools.slonik, charge, completion, hook)
        : sendCompletion(env, pools, completion).then((completed) => {
            if (!completed) throw lostLease(env, heldKeyOf(charge));
          }),
    ),
  );
}

/** The completion without a hook: in a group commit, as a prepared statement, or through slonik. */
function sendCompletion(
  env: EngineEnv,
  pools: StorePools,
  completion: CompletionInput,
): Promise<boolean> {
  if (pools.group) return pools.group.complete(completion);
  if (pools.pg) return completeKeyPrepared(pools.pg, env.tables, completion);
  return completeKey(pools.slonik, env.tables, completion);
}

/** The completion and the caller's `complete` hook in one transaction, the fenced write first. */
async function completeWithHook(
  env: EngineEnv,
  pool: DatabasePool,
  charge: OwnedCharge,
  completion: CompletionInput,
  hook: (tx: HookTransaction) => Promise<void>,
): Promise<void> {
  try {
    await pool.transaction(async (tx) => {
      if (!(await completeKey(tx, env.tables, completion))) throw lostLease(env, heldKeyOf(charge));
      await hook(hookTransaction(tx));
    });
  } catch (error) {
    // The phase rolled back; the key stays `reserved`. A provider charge id recorded for another
    // charge keeps the lease: the caller parks the key under it.
    if (!recordedElsewhere(error, 'charge')) await releaseAfterFailure(env, charge, error);
    throw error;
  }
}

function obtainProviderCharge(
  env: EngineEnv,
  charge: OwnedCharge,
  whenNotFound: WhenNotFound,
): Promise<ProviderAnswer> {
  const { provider } = env;
  const input: CreateChargeInput = {
    providerKey: charge.providerKey,
    merchantId: charge.scoped.merchantId,
    chargeId: charge.chargeId,
    customerId: charge.request.customerId,
    amountMinor: charge.request.amountMinor,
    currency: charge.request.currency,
    ...(charge.request.description === undefined
      ? {}
      : { description: charge.request.description }),
    ...(charge.request.metadata === undefined ? {} : { metadata: charge.request.metadata }),
    ...(charge.request.capture === false ? { capture: false as const } : {}),
  };
  return askProvider(env, {
    held: charge,
    subjectId: charge.chargeId,
    mayHaveActed: charge.providerMayHaveCharged,
    reservation: charge.reservation,
    whenNotFound,
    find: (opts) => provider.findCharge(charge.providerKey, opts),
    create: (opts) => provider.createCharge(input, opts),
    observe: (call, work) => observeProvider(env, charge.scoped, call, work),
  });
}

/** The charge as a held key, for parking and lease events. */
function heldKeyOf(charge: OwnedCharge): HeldKey {
  return { scoped: charge.scoped, lockToken: charge.lockToken, subjectId: charge.chargeId };
}
