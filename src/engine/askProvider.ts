import { ProviderError, ProviderUnavailableError, SimulatedCrashError } from '../errors.js';
import {
  ProviderTransientError,
  type PaymentProvider,
  type ProviderCallOptions,
} from '../provider/PaymentProvider.js';
import type { Reservation } from '../store/reservation.js';
import { callProvider } from './callProvider.js';
import type { EngineEnv } from './engineEnv.js';
import { coverProviderBudget, type LeasedKey } from './lease.js';
import { errorText, releaseAfterFailure } from './releaseQuietly.js';

/** How long to suggest a caller waits after a transient provider failure. */
export const PROVIDER_RETRY_AFTER_MS = 1_000;

/**
 * What to do when the provider has nothing under the key: make it (a client retry, or a
 * recovery worker told to finish), or cancel (the recovery worker's default for work its client
 * abandoned).
 */
export type WhenNotFound = 'create' | 'cancel';

/** What the provider step of an operation is made of: its lookup and its call. */
export type ProviderStep = {
  /** A leased key at `reserved`. */
  held: LeasedKey;
  /** The charge, refund or capture the key guards: what a `lease_lost` event names. */
  subjectId: string;
  /** False only when no earlier attempt can have called the provider under this key. */
  mayHaveActed: boolean;
  /** When the intent was written; null when this attempt just wrote it. */
  reservation: Reservation | null;
  whenNotFound: WhenNotFound;
  find(opts: ProviderCallOptions & { reservedAt: Date }): Promise<unknown>;
  create(opts: ProviderCallOptions): Promise<unknown>;
  /** Wraps each call (a span, a timer); the call itself when unset. */
  observe?: <T>(call: 'find' | 'create', work: () => Promise<T>) => Promise<T>;
};

/** What the provider step came to. */
export type ProviderAnswer =
  | { kind: 'answer'; answer: unknown; adopted: boolean }
  | { kind: 'notFound' }
  | { kind: 'untrusted'; reason: string };

/**
 * The `reserved` phase's question to the provider, the same for every operation: when an
 * earlier attempt may have acted, ask first and adopt what it finds (its own dedupe window may
 * have passed); otherwise, or when nothing is there, make it (or report `notFound` for a cancel).
 * One budget for the lookup and the call together, on the monotonic clock and capped by the
 * lease, so an attempt is done at the provider before its lease can be taken.
 *
 * @throws {ProviderUnavailableError} a transient failure; the lease is released, the key and its
 * reservation kept.
 * @throws {ProviderError} the adapter threw something else; the lease is released.
 */
export async function askProvider(env: EngineEnv, step: ProviderStep): Promise<ProviderAnswer> {
  const observe = step.observe ?? ((_call, work) => work());
  // The lease must outlast the whole budget below: see coverProviderBudget.
  const renewal = coverProviderBudget(env, step.held, step.subjectId);
  if (renewal) await renewal;
  const deadline = Math.min(
    env.clock.now() + env.providerTimeoutMs,
    step.held.lease.setAt + env.leaseMs - env.leaseMarginMs,
  );
  const budget = () => deadline - env.clock.now();
  try {
    if (step.mayHaveActed) {
      const reservedAt = step.reservation?.at ?? new Date();
      // Anything but null is an answer, checked by the caller.
      const found: unknown = await observe('find', () =>
        callProvider(
          // The signal passed through as a getter: made only if the adapter reads it.
          (options) =>
            step.find({
              get signal() {
                return options.signal;
              },
              reservedAt,
            }),
          budget(),
        ),
      );
      if (found !== null) return { kind: 'answer', answer: found, adopted: true };
      const untrusted = untrustedNotFound(env.provider, step.reservation);
      if (untrusted) return { kind: 'untrusted', reason: untrusted };
    }
    if (step.whenNotFound === 'cancel') return { kind: 'notFound' };
    const created: unknown = await observe('create', () =>
      callProvider((options) => step.create(options), budget()),
    );
    return { kind: 'answer', answer: created, adopted: false };
  } catch (error) {
    // Whether money moved is unknown. Keep `reserved`: the next attempt asks the provider.
    await releaseAfterFailure(env, step.held, error);
    if (error instanceof SimulatedCrashError) throw error;
    const failed =
      error instanceof ProviderTransientError
        ? new ProviderUnavailableError(error.retryAfterMs ?? PROVIDER_RETRY_AFTER_MS, {
            cause: error,
          })
        : new ProviderError({ cause: error });
    env.observer.event({
      type: 'provider_failed',
      ...step.held.scoped,
      transient: error instanceof ProviderTransientError,
      reason: errorText(error),
      errorCode: failed.code,
    });
    throw failed;
  }
}

/**
 * Why a lookup's "nothing here" cannot be acted on, or null when it can. Within the provider's
 * idempotency window a call under the same key is deduplicated, so a lookup that lags is
 * harmless; past it, only an authoritative lookup may lead to a call (or a cancel).
 */
export function untrustedNotFound(
  provider: PaymentProvider,
  reservation: Reservation | null,
): string | null {
  const windowMs = provider.idempotencyWindowMs;
  if (provider.lookupIsAuthoritative !== false || windowMs === undefined || reservation === null) {
    return null;
  }
  if (reservation.ageMs < windowMs) return null;
  return `the provider found nothing under the key, but the reservation is ${Math.round(reservation.ageMs / 60_000)} min old, past the provider's idempotency window (${Math.round(windowMs / 60_000)} min), and its lookup is not authoritative: acting (or cancelling) on that answer could move money twice (or lose it)`;
}
