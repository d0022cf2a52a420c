import type { Stripe } from 'stripe';
import type { ProviderCharge } from '../provider/PaymentProvider.js';
import { StripeAdapterError } from './mapStripeError.js';

/**
 * The metadata keys the adapter writes on every charge and refund, so it can be found without
 * the key: the provider key, the merchant and the local charge id on both; the local refund id
 * and the refund's reason (its text, whatever Stripe's `reason` says) on refunds.
 */
export const STRIPE_METADATA_KEYS = {
  providerKey: 'chargeonce_provider_key',
  merchantId: 'chargeonce_merchant_id',
  chargeId: 'chargeonce_charge_id',
  refundId: 'chargeonce_refund_id',
  reason: 'chargeonce_reason',
} as const;

/**
 * A Stripe charge as chargeonce records it. `succeeded` is a success and `failed` a decline
 * (its `outcome.reason`, else its `failure_code`, as the decline code); a `pending` charge
 * (a payment method that settles later) is refused: the port knows only final answers.
 *
 * @throws {StripeAdapterError} the charge is pending, or carries another provider key.
 */
export function toProviderCharge(charge: Stripe.Charge, providerKey: string): ProviderCharge {
  const stored = charge.metadata?.[STRIPE_METADATA_KEYS.providerKey];
  if (stored !== providerKey) {
    throw new StripeAdapterError(
      'unexpected_answer',
      `Stripe answered charge ${charge.id} for provider key ${JSON.stringify(providerKey)}, but the charge carries ${JSON.stringify(stored ?? null)} in its metadata`,
    );
  }
  const common = {
    id: charge.id,
    amountMinor: charge.amount,
    currency: charge.currency.toUpperCase(),
  };
  if (charge.status === 'succeeded') return { ...common, status: 'succeeded' };
  if (charge.status === 'failed') {
    const declineCode = charge.outcome?.reason ?? charge.failure_code ?? undefined;
    return { ...common, status: 'declined', ...(declineCode ? { declineCode } : {}) };
  }
  throw new StripeAdapterError(
    'unexpected_answer',
    `Stripe charge ${charge.id} is ${String(charge.status)}: the adapter supports payment methods that succeed or fail at once (cards), not ones that settle later`,
  );
}
