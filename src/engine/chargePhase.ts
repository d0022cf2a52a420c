import {
  IdempotencyKeyInUseError,
  ProviderError,
  ProviderUnavailableError,
  SimulatedCrashError,
} from '../errors.js';
import {
  ProviderTransientError,
  type CreateChargeInput,
  type ProviderCharge,
} from '../provider/PaymentProvider.js';
import type { ChargeRequest } from '../request.js';
import { completeKey, type CompletionInput } from '../store/completeKey.js';
import type { ScopedKey } from '../store/keyState.js';
import { releaseKey } from '../store/releaseKey.js';
import { withStore } from '../store/storeErrors.js';
import { callProvider } from './callProvider.js';
import { chargeBody, HTTP_STATUS } from './chargeBody.js';
import type { EngineEnv } from './engineEnv.js';
import { leaseLost } from './leaseLost.js';
import type { ChargeOutcome, CrashPoint } from './types.js';

/** How long to suggest a caller waits after a transient provider failure. */
const PROVIDER_RETRY_AFTER_MS = 1_000;

type OwnedCharge = {
  scoped: ScopedKey;
  lockToken: string;
  chargeId: string;
  providerKey: string;
  request: ChargeRequest;
  providerMayHaveCharged: boolean;
};

/** Throws `SimulatedCrashError` when the fault injector says this attempt dies at `point`. */
export function crashPoint(env: EngineEnv, point: CrashPoint, scoped: ScopedKey): void {
  if (env.faults?.shouldCrash(point, scoped)) throw new SimulatedCrashError(point);
}

/**
 * The `reserved` phase: gets the provider's charge (adopting one an interrupted attempt made, or
 * making it), then records it and the response and completes the key in one commit.
 *
 * @throws {ProviderUnavailableError} transient provider failure; lease released, key stays at
 * `reserved`, nothing stored.
 * @throws {IdempotencyKeyInUseError} the lease was lost; the attempt that took over finishes.
 */
export async function chargePhase(env: EngineEnv, charge: OwnedCharge): Promise<ChargeOutcome> {
  crashPoint(env, 'beforeProviderCall', charge.scoped);
  const { providerCharge, adopted } = await obtainProviderCharge(env, charge);
  crashPoint(env, 'afterProviderCall', charge.scoped);

  const declineCode =
    providerCharge.status === 'declined' ? (providerCharge.declineCode ?? null) : null;
  const body = chargeBody({
    chargeId: charge.chargeId,
    status: providerCharge.status,
    request: charge.request,
    providerChargeId: providerCharge.id,
    declineCode,
  });
  const completion: CompletionInput = {
    ...charge.scoped,
    lockToken: charge.lockToken,
    chargeStatus: providerCharge.status,
    providerChargeId: providerCharge.id,
    declineCode,
    responseStatus: HTTP_STATUS[providerCharge.status],
    responseBody: body,
  };
  const pool = await env.pool();
  const completeHook = env.hooks.complete;
  await withStore(async () => {
    if (!completeHook) {
      if (!(await completeKey(pool, env.tables, completion))) throw leaseLost();
      return;
    }
    try {
      await pool.transaction(async (tx) => {
        // The fenced write goes first: a zombie's hook never runs.
        if (!(await completeKey(tx, env.tables, completion))) throw leaseLost();
        await completeHook(tx, {
          ...charge.scoped,
          chargeId: charge.chargeId,
          providerKey: charge.providerKey,
          request: charge.request,
          status: providerCharge.status,
          providerChargeId: providerCharge.id,
          declineCode,
          adopted,
        });
      });
    } catch (error) {
      // The hook failed and the phase rolled back; the key stays `reserved`. Give the lease
      // back so a retry adopts the provider's charge now instead of after the lease runs out.
      if (!(error instanceof IdempotencyKeyInUseError)) await releaseQuietly(env, charge);
      throw error;
    }
  });
  crashPoint(env, 'afterCompleteCommit', charge.scoped);
  return {
    status: providerCharge.status,
    httpStatus: completion.responseStatus,
    body,
    replayed: false,
    chargeId: charge.chargeId,
    providerChargeId: providerCharge.id,
  };
}

async function obtainProviderCharge(
  env: EngineEnv,
  charge: OwnedCharge,
): Promise<{ providerCharge: ProviderCharge; adopted: boolean }> {
  const { provider, providerTimeoutMs } = env;
  try {
    if (charge.providerMayHaveCharged) {
      // An earlier attempt got past `reserved` and may have charged before it died or lost the
      // answer. The provider's own dedupe window may have expired, so ask first and adopt.
      const found = await callProvider(
        (signal) => provider.findCharge(charge.providerKey, { signal }),
        providerTimeoutMs,
      );
      if (found) return { providerCharge: found, adopted: true };
    }
    const input: CreateChargeInput = {
      providerKey: charge.providerKey,
      customerId: charge.request.customerId,
      amountMinor: charge.request.amountMinor,
      currency: charge.request.currency,
      ...(charge.request.description === undefined
        ? {}
        : { description: charge.request.description }),
      ...(charge.request.metadata === undefined ? {} : { metadata: charge.request.metadata }),
    };
    const created = await callProvider(
      (signal) => provider.createCharge(input, { signal }),
      providerTimeoutMs,
    );
    return { providerCharge: created, adopted: false };
  } catch (error) {
    // Whether money moved is unknown. Keep `reserved` (the next attempt asks the provider) and
    // give the lease back so that attempt need not wait for it to run out.
    if (error instanceof SimulatedCrashError) throw error;
    await releaseQuietly(env, charge);
    if (error instanceof ProviderTransientError) {
      throw new ProviderUnavailableError(PROVIDER_RETRY_AFTER_MS, { cause: error });
    }
    throw new ProviderError({ cause: error });
  }
}

/**
 * Releases the lease after a provider failure. If the store is down too, the provider's error is
 * still the one to report: the lease simply runs out and the next attempt takes over then.
 */
async function releaseQuietly(env: EngineEnv, charge: OwnedCharge): Promise<void> {
  try {
    const pool = await env.pool();
    await releaseKey(pool, env.tables, { ...charge.scoped, lockToken: charge.lockToken });
  } catch {
    // Deliberately ignored: see above.
  }
}
