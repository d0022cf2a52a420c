import { sql } from 'slonik';
import { hookTransaction, type HookTransaction } from './hookTransaction.js';
import {
  ChargeNeedsAttentionError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SimulatedCrashError,
} from '../errors.js';
import { ProviderTransientError, type CreateChargeInput } from '../provider/PaymentProvider.js';
import type { ChargeRequest } from '../request.js';
import { completeKey, completeKeyPrepared, type CompletionInput } from '../store/completeKey.js';
import { failKey } from '../store/failKey.js';
import type { Reservation } from '../store/reservation.js';
import type { ScopedKey } from '../store/keyState.js';
import { withStore } from '../store/storeErrors.js';
import { callProvider } from './callProvider.js';
import { chargeBody, HTTP_STATUS } from './chargeBody.js';
import { checkProviderAnswer, REFUSED_ANSWER_REASON_PREFIX } from './checkProviderAnswer.js';
import type { EngineEnv } from './engineEnv.js';
import { coverProviderBudget, type LeasedKey } from './lease.js';
import { leaseLost } from './leaseLost.js';
import { chargeAttributes, observePhase } from './observeCharge.js';
import { errorText, releaseAfterFailure } from './releaseQuietly.js';
import type { ChargeOutcome, CrashPoint } from './types.js';

/** How long to suggest a caller waits after a transient provider failure. */
export const PROVIDER_RETRY_AFTER_MS = 1_000;

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

/**
 * What to do when the provider has no charge under the key: make it (a client retry, or a
 * recovery worker told to finish charges), or cancel (the recovery worker's default for a charge
 * its client abandoned).
 */
export type WhenNotFound = 'create' | 'cancel';

/** The outcome, and how it came about (the recovery worker counts these). */
export type ChargePhaseResult = {
  outcome: ChargeOutcome;
  source: 'created' | 'adopted' | 'cancelled';
};

/** Throws `SimulatedCrashError` when the fault injector says this attempt dies at `point`. */
export function crashPoint(env: EngineEnv, point: CrashPoint, scoped: ScopedKey): void {
  if (env.faults?.shouldCrash(point, scoped)) throw new SimulatedCrashError(point);
}

/** Holds the attempt at `point` while the fault injector stalls it (tests and chaos only). */
export async function stallPoint(env: EngineEnv, point: CrashPoint, scoped: ScopedKey) {
  const stalled = env.faults?.stall?.(point, scoped);
  if (stalled) await stalled;
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
  await stallPoint(env, 'beforeProviderCall', charge.scoped);
  const found = await obtainProviderCharge(env, charge, whenNotFound);
  if (found.kind === 'notFound') return cancelCharge(env, charge);
  if (found.kind === 'untrusted') {
    await park(env, charge, found.reason);
    throw new ChargeNeedsAttentionError();
  }
  const checked = checkProviderAnswer(found.answer, charge.request);
  if (!checked.ok) return parkRefusedAnswer(env, charge, checked.reason);
  const providerCharge = checked.charge;
  const { adopted } = found;
  env.observer.annotate({ 'chargeonce.adopted': adopted });
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
  await stallPoint(env, 'afterProviderCall', charge.scoped);

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
          completeHook(tx, {
            ...hookContext(charge),
            status: providerCharge.status,
            providerChargeId: providerCharge.id,
            declineCode,
            adopted,
          })),
    );
  } catch (error) {
    // The provider answered with a charge another key of this merchant already recorded: not
    // this request's charge, whatever it says.
    if (!isDuplicateProviderChargeId(error)) throw error;
    return parkRefusedAnswer(
      env,
      charge,
      `provider charge ${providerCharge.id} is already recorded for another charge of this merchant`,
    );
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

/**
 * A provider answer that cannot be recorded: money may have moved, but not as the request says
 * (or the answer cannot tell). Parks the key in `failed` with the reason, fenced by the lock
 * token, for a person to look at; never completes it.
 */
async function parkRefusedAnswer(
  env: EngineEnv,
  charge: OwnedCharge,
  reason: string,
): Promise<never> {
  await park(env, charge, `${REFUSED_ANSWER_REASON_PREFIX}${reason}`);
  throw new ProviderAnswerInvalidError(reason);
}

/** Parks the key in `failed` with `reason`, fenced by the lock token. */
async function park(env: EngineEnv, charge: OwnedCharge, reason: string): Promise<void> {
  const pool = await env.pool();
  const parked = await withStore(() =>
    failKey(pool, env.tables, { ...charge.scoped, lockToken: charge.lockToken, reason }),
  );
  if (!parked) throw lostLease(env, charge);
  env.observer.event({ type: 'parked', ...charge.scoped, reason });
}

function terminal(
  charge: OwnedCharge,
  status: 'succeeded' | 'declined' | 'cancelled',
  providerChargeId: string | null,
  declineCode: string | null,
): CompletionInput {
  return {
    ...charge.scoped,
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

function hookContext(charge: OwnedCharge) {
  return {
    ...charge.scoped,
    chargeId: charge.chargeId,
    providerKey: charge.providerKey,
    request: charge.request,
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
  const pools = await env.pools();
  const pool = pools.slonik;
  if (env.faults?.shouldCrash('beforeCompleteCommit', charge.scoped)) {
    return crashBeforeCommit(env, completion, hook);
  }
  await observePhase(env, 'complete', charge.scoped, () =>
    withStore(async () => {
      if (!hook) {
        const completed = pools.group
          ? await pools.group.complete(completion)
          : pools.pg
            ? await completeKeyPrepared(pools.pg, env.tables, completion)
            : await completeKey(pool, env.tables, completion);
        if (!completed) throw lostLease(env, charge);
        return;
      }
      try {
        await pool.transaction(async (tx) => {
          if (!(await completeKey(tx, env.tables, completion))) throw lostLease(env, charge);
          await hook(hookTransaction(tx));
        });
      } catch (error) {
        // The hook failed and the phase rolled back; the key stays `reserved`.
        await releaseAfterFailure(env, charge, error);
        throw error;
      }
    }),
  );
}

/** The lease was taken over: reported, and the error the attempt stops with. */
function lostLease(env: EngineEnv, charge: OwnedCharge) {
  env.observer.event({ type: 'lease_lost', ...charge.scoped, chargeId: charge.chargeId });
  return leaseLost();
}

/**
 * The `beforeCompleteCommit` crash: writes the completion (and runs the hook) in a transaction,
 * then the connection dies before COMMIT, as it would with the process: PostgreSQL terminates
 * the backend and rolls the transaction back. Nothing is released.
 */
async function crashBeforeCommit(
  env: EngineEnv,
  completion: CompletionInput,
  hook: ((tx: HookTransaction) => Promise<void>) | undefined,
): Promise<never> {
  const pool = await env.pool();
  await pool
    .transaction(async (tx) => {
      await completeKey(tx, env.tables, completion);
      if (hook) await hook(hookTransaction(tx));
      await tx.query(sql.unsafe`SELECT pg_terminate_backend(pg_backend_pid())`);
    })
    .catch(() => undefined);
  throw new SimulatedCrashError('beforeCompleteCommit');
}

async function obtainProviderCharge(
  env: EngineEnv,
  charge: OwnedCharge,
  whenNotFound: WhenNotFound,
): Promise<
  | { kind: 'answer'; answer: unknown; adopted: boolean }
  | { kind: 'notFound' }
  | { kind: 'untrusted'; reason: string }
> {
  const { provider } = env;
  // The lease must outlast the whole budget below: see coverProviderBudget.
  await coverProviderBudget(env, charge);
  // One budget for the lookup and the charge together, on the monotonic clock: an attempt never
  // spends more than providerTimeoutMs at the provider, so it is done there before its lease
  // can be taken, whatever the wall clock does.
  // Capped by the lease too, so the rule holds by construction, not only by the margin.
  const deadline = Math.min(
    env.clock.now() + env.providerTimeoutMs,
    charge.lease.setAt + env.leaseMs - env.leaseMarginMs,
  );
  const budget = () => deadline - env.clock.now();
  try {
    if (charge.providerMayHaveCharged) {
      // An earlier attempt got past `reserved` and may have charged before it died or lost the
      // answer. The provider's own dedupe window may have expired, so ask first and adopt.
      // Anything but null is an answer, checked by the caller.
      const reservedAt = charge.reservation?.at ?? new Date();
      const found: unknown = await observeProvider(env, charge, 'find', () =>
        callProvider(
          (signal) => provider.findCharge(charge.providerKey, { signal, reservedAt }),
          budget(),
        ),
      );
      if (found !== null) return { kind: 'answer', answer: found, adopted: true };
      const untrusted = untrustedNotFound(provider, charge.reservation);
      if (untrusted) return { kind: 'untrusted', reason: untrusted };
    }
    if (whenNotFound === 'cancel') return { kind: 'notFound' };
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
    const created: unknown = await observeProvider(env, charge, 'create', () =>
      callProvider((signal) => provider.createCharge(input, { signal }), budget()),
    );
    return { kind: 'answer', answer: created, adopted: false };
  } catch (error) {
    // Whether money moved is unknown. Keep `reserved`: the next attempt asks the provider.
    await releaseAfterFailure(env, charge, error);
    if (error instanceof SimulatedCrashError) throw error;
    const failed =
      error instanceof ProviderTransientError
        ? new ProviderUnavailableError(error.retryAfterMs ?? PROVIDER_RETRY_AFTER_MS, {
            cause: error,
          })
        : new ProviderError({ cause: error });
    env.observer.event({
      type: 'provider_failed',
      ...charge.scoped,
      transient: error instanceof ProviderTransientError,
      reason: errorText(error),
      errorCode: failed.code,
    });
    throw failed;
  }
}

/** One provider call under its span (`chargeonce.provider.find` / `.create`), timed. */
async function observeProvider<T>(
  env: EngineEnv,
  charge: OwnedCharge,
  call: 'find' | 'create',
  work: () => Promise<T>,
): Promise<T> {
  const startedAt = performance.now();
  let outcome = 'answered';
  try {
    return await env.observer.span(
      `chargeonce.provider.${call}`,
      chargeAttributes(env, charge.scoped),
      work,
    );
  } catch (error) {
    outcome = error instanceof ProviderTransientError ? 'transient' : 'error';
    throw error;
  } finally {
    env.observer.instruments?.providerDuration(
      (performance.now() - startedAt) / 1000,
      call,
      outcome,
    );
  }
}

/**
 * Why a lookup's "nothing here" cannot be acted on, or null when it can. Within the provider's
 * idempotency window a charge under the same key is deduplicated, so a lookup that lags is
 * harmless; past it, only an authoritative lookup may lead to a charge (or a cancel).
 */
export function untrustedNotFound(
  provider: EngineEnv['provider'],
  reservation: Reservation | null,
): string | null {
  const windowMs = provider.idempotencyWindowMs;
  if (provider.lookupIsAuthoritative !== false || windowMs === undefined || reservation === null) {
    return null;
  }
  if (reservation.ageMs < windowMs) return null;
  return `the provider found no charge under the key, but the reservation is ${Math.round(reservation.ageMs / 60_000)} min old, past the provider's idempotency window (${Math.round(windowMs / 60_000)} min), and its lookup is not authoritative: charging (or cancelling) on that answer could charge twice (or lose a charge)`;
}

/** The unique index on a merchant's provider charge ids refused the completion. */
function isDuplicateProviderChargeId(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const fields = e as { code?: unknown; constraint?: unknown };
    if (fields.code === '23505' && fields.constraint === 'charges_provider_charge_id_key') {
      return true;
    }
  }
  return false;
}
