import type { Stripe } from 'stripe';
import type {
  CaptureInput,
  CreateRefundInput,
  FindCaptureInput,
  FindChargeOptions,
  PaymentProvider,
  ProviderCallOptions,
  ProviderCapture,
  ProviderRefund,
} from '../provider/PaymentProvider.js';
import { findInListing } from './findInListing.js';
import { mapStripeError, StripeAdapterError } from './mapStripeError.js';
import { STRIPE_METADATA_KEYS } from './stripeCharge.js';
import { untilAborted } from './untilAborted.js';

/** The SDK's options on every request: its own retries and timeout. */
export type StripeRequestOptions = { maxNetworkRetries: number; timeout: number };

/** The refund and capture methods of the port, as the Stripe adapter implements them. */
export type StripeMovementMethods = Required<
  Pick<PaymentProvider, 'createRefund' | 'findRefund' | 'capture' | 'findCapture'>
>;

/** The refund reasons Stripe takes as `reason`; any other text goes in metadata only. */
const STRIPE_REFUND_REASONS: ReadonlySet<string> = new Set([
  'duplicate',
  'fraudulent',
  'requested_by_customer',
]);

/**
 * Refunds and captures on Stripe's Charges and Refunds APIs.
 *
 * - `createRefund`: `refunds.create({ charge, amount, reason?, metadata })` with
 *   `idempotencyKey: providerKey`; the metadata carries the provider key, the merchant, the
 *   local refund and charge ids and the reason's text.
 * - `findRefund`: Stripe has no search of refunds, and the port gives only the key: it lists
 *   the account's refunds created since the reservation, newest first, page by page, and matches
 *   the metadata (bounded as `findCharge`'s listing is, by `maxListPages`).
 * - `capture`: `charges.capture(providerChargeId, { amount })` with `idempotencyKey`; the
 *   capture's id is the charge's (Stripe has no capture object).
 * - `findCapture`: retrieves the charge: captured → its `amount_captured`, else null. Stripe
 *   records no key on a capture, so this finds a capture of the charge, whoever made it; the
 *   engine sends one capture key per authorization, so it is this key's.
 *
 * Stripe refuses a refund past what is left of the charge, or a capture of a captured charge,
 * with a 400 (no refund object, nothing moved): a `StripeAdapterError` (`invalid_request`, the
 * Stripe error as its cause), like any request Stripe refuses. A refund Stripe answers `failed`
 * or `canceled` is a `failed` refund with its `failure_reason`; a `pending` one is refused as an
 * `unexpected_answer`, as pending charges are: the port knows only final answers.
 */
export function createStripeMovements(context: {
  stripe: Pick<Stripe, 'charges' | 'refunds'>;
  requestOptions: StripeRequestOptions;
  clockSkewMs: number;
  maxListPages: number;
}): StripeMovementMethods {
  const { stripe, requestOptions } = context;

  /** One SDK request under the call's signal, its failure mapped. */
  async function call<T>(
    request: (options: StripeRequestOptions) => Promise<T>,
    providerKey: string,
    signal: AbortSignal,
  ): Promise<T> {
    try {
      return await untilAborted(request(requestOptions), signal);
    } catch (error) {
      throw mapStripeError(error, providerKey);
    }
  }

  return {
    async createRefund(input: CreateRefundInput, opts: ProviderCallOptions) {
      const params: Stripe.RefundCreateParams = {
        charge: input.providerChargeId,
        amount: input.amountMinor,
        ...(input.reason !== undefined && STRIPE_REFUND_REASONS.has(input.reason)
          ? { reason: input.reason }
          : {}),
        metadata: refundMetadata(input),
      };
      const refund = await call(
        // Stripe dedupes on this: the same value on every retry of one refund.
        (options) =>
          stripe.refunds.create(params, { ...options, idempotencyKey: input.providerKey }),
        input.providerKey,
        opts.signal,
      );
      return toProviderRefund(refund, input.providerKey);
    },

    async findRefund(providerKey: string, opts: FindChargeOptions) {
      const found = await findInListing({
        what: 'refunds',
        providerKey,
        reservedAt: opts.reservedAt,
        clockSkewMs: context.clockSkewMs,
        maxListPages: context.maxListPages,
        signal: opts.signal,
        page: (params) =>
          call((options) => stripe.refunds.list(params, options), providerKey, opts.signal),
        matches: (refund) => refund.metadata?.[STRIPE_METADATA_KEYS.providerKey] === providerKey,
      });
      return found === null ? null : toProviderRefund(found, providerKey);
    },

    async capture(input: CaptureInput, opts: ProviderCallOptions) {
      const charge = await call(
        (options) =>
          stripe.charges.capture(
            input.providerChargeId,
            { amount: input.amountMinor },
            // Stripe dedupes on this: the same value on every retry of one capture.
            { ...options, idempotencyKey: input.providerKey },
          ),
        input.providerKey,
        opts.signal,
      );
      const captured = toProviderCapture(charge);
      if (captured === null) {
        throw new StripeAdapterError(
          'unexpected_answer',
          `Stripe answered the capture of ${charge.id} (provider key ${JSON.stringify(input.providerKey)}) with a charge that is not captured`,
        );
      }
      return captured;
    },

    async findCapture(input: FindCaptureInput, opts: FindChargeOptions) {
      const charge = await call(
        (options) => stripe.charges.retrieve(input.providerChargeId, {}, options),
        input.providerKey,
        opts.signal,
      );
      return toProviderCapture(charge);
    },
  };
}

/** chargeonce's keys on a refund, so that `findRefund` finds it and a person can read it. */
function refundMetadata(input: CreateRefundInput): Record<string, string> {
  const metadata: Record<string, string> = {
    [STRIPE_METADATA_KEYS.providerKey]: input.providerKey,
  };
  // Absent only when a caller other than the engine (a hand-written test) leaves them out.
  if (input.merchantId) metadata[STRIPE_METADATA_KEYS.merchantId] = input.merchantId;
  if (input.chargeId) metadata[STRIPE_METADATA_KEYS.chargeId] = input.chargeId;
  if (input.refundId) metadata[STRIPE_METADATA_KEYS.refundId] = input.refundId;
  if (input.reason !== undefined) metadata[STRIPE_METADATA_KEYS.reason] = input.reason;
  return metadata;
}

/**
 * A Stripe refund as chargeonce records it.
 *
 * @throws {StripeAdapterError} the refund carries another provider key, or is not final
 * (`pending`, `requires_action`).
 */
export function toProviderRefund(refund: Stripe.Refund, providerKey: string): ProviderRefund {
  const stored = refund.metadata?.[STRIPE_METADATA_KEYS.providerKey];
  if (stored !== providerKey) {
    throw new StripeAdapterError(
      'unexpected_answer',
      `Stripe answered refund ${refund.id} for provider key ${JSON.stringify(providerKey)}, but the refund carries ${JSON.stringify(stored ?? null)} in its metadata`,
    );
  }
  const common = {
    id: refund.id,
    amountMinor: refund.amount,
    currency: refund.currency.toUpperCase(),
  };
  if (refund.status === 'succeeded') return { ...common, status: 'succeeded' };
  if (refund.status === 'failed' || refund.status === 'canceled') {
    return { ...common, status: 'failed', failureCode: refund.failure_reason ?? refund.status };
  }
  throw new StripeAdapterError(
    'unexpected_answer',
    `Stripe refund ${refund.id} is ${String(refund.status)}: the adapter supports refunds that succeed or fail at once (cards), not ones that settle later`,
  );
}

/** What Stripe captured of a charge, as a capture named by the charge's id; null if nothing. */
export function toProviderCapture(charge: Stripe.Charge): ProviderCapture | null {
  if (!charge.captured || !(charge.amount_captured > 0)) return null;
  return {
    id: charge.id,
    status: 'succeeded',
    amountMinor: charge.amount_captured,
    currency: charge.currency.toUpperCase(),
  };
}
