export { createStripeProvider, STRIPE_IDEMPOTENCY_WINDOW_MS } from './createStripeProvider.js';
export type {
  StripeChargesClient,
  StripePaymentSource,
  StripeProvider,
  StripeProviderOptions,
} from './createStripeProvider.js';
export type { StripeLookup } from './findStripeCharge.js';
export { StripeAdapterError } from './mapStripeError.js';
export type { StripeAdapterErrorKind } from './mapStripeError.js';
export { STRIPE_METADATA_KEYS } from './stripeCharge.js';
