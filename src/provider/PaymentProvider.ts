/** What chargeonce asks a payment provider to charge. */
export type CreateChargeInput = {
  /** Stable across every retry of one operation; the provider must dedupe on it. */
  providerKey: string;
  customerId: string;
  amountMinor: number;
  currency: string;
  description?: string;
  metadata?: Record<string, string>;
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
export type ProviderCallOptions = { signal: AbortSignal };

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
  findCharge(providerKey: string, opts: ProviderCallOptions): Promise<ProviderCharge | null>;
}

/**
 * A provider failure that may not happen next time: timeout, connection reset, 5xx, 429.
 * Whether the provider charged is unknown; chargeonce finds out with `findCharge` on the retry.
 */
export class ProviderTransientError extends Error {
  /** Where the failure happened, for logs (`timeout`, `reset`, `http_503`, …). */
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super(`Transient payment provider failure: ${reason}`, { cause: options?.cause });
    this.name = 'ProviderTransientError';
    this.reason = reason;
  }
}
