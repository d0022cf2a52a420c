import { isErrorOfKind, nameErrorKind, recordErrorKinds } from '../errorKinds.js';

/** What chargeonce asks a payment provider to charge. */
export type CreateChargeInput = {
  /** Stable across every retry of one operation; the provider must dedupe on it. */
  providerKey: string;
  /** The merchant the charge is for: worth recording with the charge, to find it by hand. */
  merchantId: string;
  /** chargeonce's local charge id (a UUID), the same on every retry of the key. */
  chargeId: string;
  customerId: string;
  amountMinor: number;
  currency: string;
  description?: string;
  metadata?: Record<string, string>;
  /**
   * `false`: authorize only; the money is taken later by `capture` (at most once, never more than
   * authorized). Absent: authorize and capture at once.
   */
  capture?: false;
};

/** A charge as the provider records it. */
export type ProviderCharge = {
  id: string;
  status: 'succeeded' | 'declined';
  amountMinor: number;
  currency: string;
  declineCode?: string;
};

/** Options for every provider call. */
export type ProviderCallOptions = {
  /**
   * Aborted when the call's budget runs out (its reason a `ProviderTransientError('timeout')`):
   * pass it to the HTTP client. Made when first read, so an adapter that never reads it costs a
   * charge no AbortController; read after the deadline, it is already aborted.
   */
  readonly signal: AbortSignal;
};

/** Options of a lookup. */
export type FindChargeOptions = ProviderCallOptions & {
  /**
   * When the charge intent was written, by PostgreSQL's clock: the charge, if any, was made at or
   * after it, so a lookup may bound a listing by creation time around it.
   */
  reservedAt: Date;
};

/** What chargeonce asks a provider to refund: part or all of a charge it captured. */
export type CreateRefundInput = {
  /** Stable across every retry of one refund; the provider must dedupe on it. */
  providerKey: string;
  merchantId: string;
  /** chargeonce's local refund id (a UUID), the same on every retry of the key. */
  refundId: string;
  /** chargeonce's local charge id. */
  chargeId: string;
  /** The provider's id of the charge refunded. */
  providerChargeId: string;
  amountMinor: number;
  currency: string;
  reason?: string;
};

/** A refund as the provider records it. `failed`: the provider refused it (a real answer). */
export type ProviderRefund = {
  /**
   * The provider's id of this refund, its own: chargeonce records a provider refund once per
   * merchant, and parks a refund answered with an id another refund recorded. (Unlike a
   * capture's, it cannot be the charge's id: a charge may be refunded several times.)
   */
  id: string;
  status: 'succeeded' | 'failed';
  amountMinor: number;
  currency: string;
  failureCode?: string;
};

/** What chargeonce asks a provider to capture of a charge it only authorized. */
export type CaptureInput = {
  /** Stable across every retry of one capture; the provider must dedupe on it. */
  providerKey: string;
  merchantId: string;
  /** chargeonce's local capture id (a UUID), the same on every retry of the key. */
  captureId: string;
  chargeId: string;
  /** The provider's id of the authorized charge. */
  providerChargeId: string;
  /** How much to capture: at most what was authorized. */
  amountMinor: number;
  currency: string;
};

/**
 * A capture as the provider records it: `id` names it (a provider without capture objects may
 * use the charge's id), `amountMinor` is what was captured. `failed`: the provider refused it (an
 * expired authorization, say).
 */
export type ProviderCapture = {
  id: string;
  status: 'succeeded' | 'failed';
  amountMinor: number;
  currency: string;
  failureCode?: string;
};

/** What a capture lookup is told: the key, and the charge it was for. */
export type FindCaptureInput = { providerKey: string; providerChargeId: string };

/**
 * The port a payment provider adapter implements.
 *
 * Both methods must throw `ProviderTransientError` for anything that may succeed on a retry
 * (timeout, connection reset, 5xx, 429). A decline is not an error: it is a `ProviderCharge`
 * with `status: 'declined'`.
 */
export interface PaymentProvider {
  /** Charges, deduplicating on `input.providerKey`. */
  createCharge(input: CreateChargeInput, opts: ProviderCallOptions): Promise<ProviderCharge>;
  /** Finds the charge made under `providerKey`, whether or not the provider still dedupes it. */
  findCharge(providerKey: string, opts: FindChargeOptions): Promise<ProviderCharge | null>;
  /**
   * How long the provider deduplicates `createCharge` on `providerKey` (Stripe: 24 hours). Within
   * it, a lookup that misses a charge is harmless: charging again under the key returns the first
   * charge. Unset: as long as chargeonce can tell.
   */
  readonly idempotencyWindowMs?: number;
  /**
   * Whether a `null` from `findCharge` proves that no charge was made under the key (a search
   * that lags behind does not). When false, a key whose reservation is older than
   * `idempotencyWindowMs` and whose lookup finds nothing is parked for a person, never charged
   * or cancelled on that answer.
   * @defaultValue `true`
   */
  readonly lookupIsAuthoritative?: boolean;
  /**
   * Refunds part or all of a captured charge, deduplicating on `input.providerKey`. Optional:
   * `processRefund` needs it (and `findRefund`).
   */
  createRefund?(input: CreateRefundInput, opts: ProviderCallOptions): Promise<ProviderRefund>;
  /** Finds the refund made under `providerKey`, whether or not the provider still dedupes it. */
  findRefund?(providerKey: string, opts: FindChargeOptions): Promise<ProviderRefund | null>;
  /**
   * Captures an authorized charge (made with `capture: false`), deduplicating on
   * `input.providerKey`. Optional: `processCapture` needs it (and `findCapture`).
   */
  capture?(input: CaptureInput, opts: ProviderCallOptions): Promise<ProviderCapture>;
  /** Finds the capture made under `input.providerKey` (or of its charge), if any. */
  findCapture?(input: FindCaptureInput, opts: FindChargeOptions): Promise<ProviderCapture | null>;
}

/**
 * A provider failure that may not happen next time: timeout, connection reset, 5xx, 429.
 * Whether the provider charged is unknown; chargeonce finds out with `findCharge` on the retry.
 */
export class ProviderTransientError extends Error {
  /**
   * True for an error of this class, thrown by this copy of chargeonce or by another in the same
   * process (an adapter that loads the package with `require`, an engine loaded with `import`).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isErrorOfKind(this, value);
  }

  /** Where the failure happened, for logs (`timeout`, `reset`, `http_503`, …). */
  readonly reason: string;
  /** How long the provider asked callers to wait (its `Retry-After`), if it said. */
  readonly retryAfterMs: number | undefined;

  constructor(reason: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(`Transient payment provider failure: ${reason}`, { cause: options?.cause });
    this.name = 'ProviderTransientError';
    this.reason = reason;
    this.retryAfterMs = options?.retryAfterMs;
    recordErrorKinds(this, new.target);
  }
}

nameErrorKind(ProviderTransientError, 'ProviderTransientError');

/**
 * What a provider declares about itself beyond its methods (its idempotency window, whether its
 * lookup is authoritative), for a wrapper to carry over: the engine reads them off the provider.
 */
export function declaredTraits(
  provider: PaymentProvider,
): Pick<PaymentProvider, 'idempotencyWindowMs' | 'lookupIsAuthoritative'> {
  return {
    ...(provider.idempotencyWindowMs === undefined
      ? {}
      : { idempotencyWindowMs: provider.idempotencyWindowMs }),
    ...(provider.lookupIsAuthoritative === undefined
      ? {}
      : { lookupIsAuthoritative: provider.lookupIsAuthoritative }),
  };
}
