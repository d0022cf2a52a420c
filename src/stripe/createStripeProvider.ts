import type { Stripe } from 'stripe';
import { InvalidConfigurationError } from '../errors.js';
import type {
  CreateChargeInput,
  FindChargeOptions,
  PaymentProvider,
  ProviderCallOptions,
  ProviderCharge,
} from '../provider/PaymentProvider.js';
import { findStripeCharge, type StripeLookup } from './findStripeCharge.js';
import { isStripeError, mapStripeError, StripeAdapterError } from './mapStripeError.js';
import { STRIPE_METADATA_KEYS, toProviderCharge } from './stripeCharge.js';
import { createStripeMovements, type StripeMovementMethods } from './stripeMovements.js';
import { untilAborted } from './untilAborted.js';

/** The part of a `Stripe` client the adapter uses: charges, and refunds. */
export type StripeChargesClient = Pick<Stripe, 'charges' | 'refunds'>;

/** The Stripe adapter: the port, refunds and captures included. */
export type StripeProvider = PaymentProvider & StripeMovementMethods;

/** What a charge is paid with, as Stripe's Charges API takes it. */
export type StripePaymentSource = { source?: string; customer?: string };

/** Options of {@link createStripeProvider}. */
export type StripeProviderOptions = {
  /** A client of the official `stripe` package: `new Stripe(secretKey)`. */
  stripe: StripeChargesClient;
  /**
   * What each charge is paid with. Must be a pure function of the input: a retry must send the
   * very same parameters, or Stripe refuses the idempotency key.
   * @defaultValue `customerId` as a Stripe customer when it starts with `cus_` (charged on its
   * default source), else as a `source` (a token such as `tok_visa`, a card or a source id)
   */
  paymentSource?: (input: CreateChargeInput) => StripePaymentSource;
  /**
   * How `findCharge` looks: `search-then-list` asks the Search API first and, when it finds
   * nothing (or the account has no search), lists charges created since the reservation;
   * `list` only lists; `search` only searches, which is cheaper but lags (Stripe: usually under
   * a minute, longer during incidents), so its "nothing" is not proof, and the provider then
   * says `lookupIsAuthoritative: false`.
   * @defaultValue `'search-then-list'`
   */
  lookup?: StripeLookup;
  /**
   * How far before the reservation (PostgreSQL's clock) a charge may be stamped by Stripe's
   * clock: the listing's lower bound is `reservedAt - clockSkewMs`.
   * @defaultValue 5 minutes
   */
  clockSkewMs?: number;
  /**
   * At most this many pages of 100 charges (or refunds, for `findRefund`) per listing. A listing
   * that reaches it without getting past the reservation cannot prove a charge absent and throws
   * (`StripeAdapterError`, kind `lookup_incomplete`) rather than answer "not found".
   * @defaultValue 100
   */
  maxListPages?: number;
  /**
   * The SDK's own retries on each request. Off: the engine owns retries and decides on each
   * with `findCharge`. With retries on, the SDK resends a create under the same idempotency
   * key, which is safe but spends the engine's provider budget.
   * @defaultValue 0
   */
  maxNetworkRetries?: number;
  /**
   * The SDK's timeout for each request. The adapter stops waiting when chargeonce's signal
   * aborts, but the SDK has no abort of its own: an abandoned request lives on until this, and
   * the sweeper's grace must outlast it (a request that reaches Stripe after the sweeper looked
   * and cancelled is a lost charge). Keep it near the engine's `providerTimeoutMs` (raise both
   * together) and below its `sweepGraceMs`.
   * @defaultValue `10_000`: the engine's default `providerTimeoutMs`, well inside its default
   * grace (30 s); the SDK's own default, 80 s, is not
   */
  requestTimeoutMs?: number;
};

/** The SDK's timeout per request unless told: the engine's default provider budget. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Stripe deduplicates a request under an idempotency key for at least 24 hours. */
export const STRIPE_IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000;

/**
 * A `PaymentProvider` on Stripe's Charges and Refunds APIs through the official SDK.
 *
 * - `createCharge` creates a charge with `idempotencyKey: providerKey` and the provider key (and
 *   the merchant and the local charge id) in its metadata; a card decline
 *   (`StripeCardError`) is a `declined` charge with its `decline_code`. `capture: false`
 *   authorizes only (Stripe's `capture: false`).
 * - `findCharge` finds the charge by that metadata: Search API, then a listing of the charges
 *   created since the reservation (see {@link StripeProviderOptions.lookup}).
 * - `createRefund`, `findRefund`, `capture`, `findCapture`: see `createStripeMovements`
 *   (refunds found by their metadata in a bounded listing; a capture is named by its charge).
 * - Connection errors, 5xx, 429 and 409 (`idempotency_key_in_use`) are `ProviderTransientError`s
 *   carrying `Retry-After`; everything else Stripe refuses is a {@link StripeAdapterError}.
 *
 * @throws {InvalidConfigurationError} no Stripe client, or an option out of range.
 */
export function createStripeProvider(options: StripeProviderOptions): StripeProvider {
  const { stripe } = (options ?? {}) as Partial<StripeProviderOptions>;
  if (
    typeof stripe?.charges?.create !== 'function' ||
    typeof stripe?.refunds?.create !== 'function'
  ) {
    throw new InvalidConfigurationError('createStripeProvider: `stripe` must be a Stripe client');
  }
  const lookup = options.lookup ?? 'search-then-list';
  if (!['search-then-list', 'list', 'search'].includes(lookup)) {
    throw new InvalidConfigurationError(`createStripeProvider: unknown lookup ${String(lookup)}`);
  }
  const clockSkewMs = options.clockSkewMs ?? 5 * 60_000;
  const maxListPages = options.maxListPages ?? 100;
  const maxNetworkRetries = options.maxNetworkRetries ?? 0;
  requireNumber('clockSkewMs', clockSkewMs, 0);
  requireNumber('maxListPages', maxListPages, 1);
  requireNumber('maxNetworkRetries', maxNetworkRetries, 0);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  requireNumber('requestTimeoutMs', requestTimeoutMs, 1);
  const paymentSource = options.paymentSource ?? defaultPaymentSource;
  const requestOptions = { maxNetworkRetries, timeout: requestTimeoutMs };
  const lookupState = { searchAvailable: lookup !== 'list' };

  return {
    idempotencyWindowMs: STRIPE_IDEMPOTENCY_WINDOW_MS,
    lookupIsAuthoritative: lookup !== 'search',
    ...createStripeMovements({ stripe, requestOptions, clockSkewMs, maxListPages }),

    async createCharge(input: CreateChargeInput, opts: ProviderCallOptions) {
      const params: Stripe.ChargeCreateParams = {
        amount: input.amountMinor,
        currency: input.currency.toLowerCase(),
        ...paymentSource(input),
        ...(input.description === undefined ? {} : { description: input.description }),
        metadata: chargeMetadata(input),
        // Absent unless false: a charge captured at once sends the parameters it always sent.
        ...(input.capture === false ? { capture: false } : {}),
      };
      try {
        const charge = await untilAborted(
          stripe.charges.create(params, {
            ...requestOptions,
            // Stripe dedupes on this: the same value on every retry of one operation.
            idempotencyKey: input.providerKey,
          }),
          opts.signal,
        );
        return toProviderCharge(charge, input.providerKey);
      } catch (error) {
        if (isStripeError(error) && error.type === 'StripeCardError') {
          return declined(error, input);
        }
        throw mapStripeError(error, input.providerKey);
      }
    },

    async findCharge(providerKey: string, opts: FindChargeOptions) {
      const found = await findStripeCharge({
        stripe,
        providerKey,
        reservedAt: opts.reservedAt,
        lookup,
        state: lookupState,
        clockSkewMs,
        maxListPages,
        call: async (request) => {
          try {
            return await untilAborted(request(requestOptions), opts.signal);
          } catch (error) {
            throw mapStripeError(error, providerKey);
          }
        },
        signal: opts.signal,
      });
      return found === null ? null : toProviderCharge(found, providerKey);
    },
  };
}

/** `cus_…` is a customer, charged on its default source; anything else is a source. */
export function defaultPaymentSource(input: CreateChargeInput): StripePaymentSource {
  return input.customerId.startsWith('cus_')
    ? { customer: input.customerId }
    : { source: input.customerId };
}

/**
 * The caller's metadata, then chargeonce's own keys (which win: they are how the charge is
 * found again). Stripe allows 50 keys; the caller's metadata must leave room for these.
 */
function chargeMetadata(input: CreateChargeInput): Record<string, string> {
  const metadata: Record<string, string> = {
    ...input.metadata,
    [STRIPE_METADATA_KEYS.providerKey]: input.providerKey,
  };
  // Absent only when a caller other than the engine (a hand-written test) leaves them out.
  if (input.merchantId) metadata[STRIPE_METADATA_KEYS.merchantId] = input.merchantId;
  if (input.chargeId) metadata[STRIPE_METADATA_KEYS.chargeId] = input.chargeId;
  if (Object.keys(metadata).length > 50) {
    throw new StripeAdapterError(
      'invalid_request',
      `Stripe allows 50 metadata keys; this charge's metadata has ${Object.keys(input.metadata ?? {}).length} and chargeonce adds ${Object.keys(metadata).length - Object.keys(input.metadata ?? {}).length}`,
    );
  }
  return metadata;
}

/**
 * A card decline. Stripe recorded a failed charge (its id is on the error) with the parameters
 * sent under this key, so its amount and currency are the input's: a replay with other
 * parameters would have been refused.
 */
function declined(
  error: { charge?: string; decline_code?: string; code?: string; message: string },
  input: CreateChargeInput,
): ProviderCharge {
  if (!error.charge) {
    throw new StripeAdapterError(
      'unexpected_answer',
      `Stripe declined provider key ${JSON.stringify(input.providerKey)} without a charge id: ${error.message}`,
      { cause: error },
    );
  }
  const declineCode = error.decline_code ?? error.code;
  return {
    id: error.charge,
    status: 'declined',
    amountMinor: input.amountMinor,
    currency: input.currency,
    ...(declineCode ? { declineCode } : {}),
  };
}

function requireNumber(name: string, value: number, min: number): void {
  if (!(typeof value === 'number' && Number.isFinite(value) && value >= min)) {
    throw new InvalidConfigurationError(
      `createStripeProvider: ${name} must be a number >= ${min}, got ${String(value)}`,
    );
  }
}
