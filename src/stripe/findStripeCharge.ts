import type { Stripe } from 'stripe';
import { ProviderTransientError } from '../provider/PaymentProvider.js';
import { findInListing } from './findInListing.js';
import { isStripeError, StripeAdapterError } from './mapStripeError.js';
import { STRIPE_METADATA_KEYS } from './stripeCharge.js';

/** How `findCharge` looks a charge up; see `StripeProviderOptions.lookup`. */
export type StripeLookup = 'search-then-list' | 'list' | 'search';

type RequestOptions = { maxNetworkRetries: number; timeout?: number };

/** Runs one SDK request under the call's signal, mapping its failure. */
type Call = <T>(request: (options: RequestOptions) => Promise<T>) => Promise<T>;

/**
 * The charge made under `providerKey`, found by the metadata `createCharge` wrote, or null.
 *
 * The Search API answers in one request but lags behind writes (Stripe: "don't use search in
 * read-after-write flows where strict consistency is necessary"), so its hit is trusted and its
 * miss is not: unless `lookup` is `search`, a miss falls through to listing the account's
 * charges, newest first, down to `reservedAt - clockSkewMs` (a charge under the key cannot be
 * older than its reservation), page by page. An account without search (it answers 404, as
 * stripe-stateful-mock does, or `feature_not_enabled`) is remembered and only listed from then on.
 */
export async function findStripeCharge(args: {
  stripe: Pick<Stripe, 'charges'>;
  providerKey: string;
  reservedAt: Date;
  lookup: StripeLookup;
  state: { searchAvailable: boolean };
  clockSkewMs: number;
  maxListPages: number;
  call: Call;
  signal: AbortSignal;
}): Promise<Stripe.Charge | null> {
  const { stripe, providerKey, lookup, state, call } = args;
  if (lookup !== 'list' && state.searchAvailable) {
    try {
      const result = await call((options) =>
        stripe.charges.search(
          { query: `metadata['${STRIPE_METADATA_KEYS.providerKey}']:${quote(providerKey)}` },
          options,
        ),
      );
      const hit = oldest(result.data.filter((c) => matches(c, providerKey)));
      if (hit) return hit;
      if (lookup === 'search') return null;
    } catch (error) {
      if (!searchUnavailable(error)) throw error;
      if (lookup === 'search') {
        throw new StripeAdapterError(
          'search_unavailable',
          'This Stripe account has no Search API; use lookup: "search-then-list" or "list"',
          { cause: error },
        );
      }
      state.searchAvailable = false;
    }
  }
  return listLookup(args);
}

function listLookup(args: {
  stripe: Pick<Stripe, 'charges'>;
  providerKey: string;
  reservedAt: Date;
  clockSkewMs: number;
  maxListPages: number;
  call: Call;
  signal: AbortSignal;
}): Promise<Stripe.Charge | null> {
  const { stripe, providerKey, call } = args;
  return findInListing({
    ...args,
    what: 'charges',
    page: (params) => call((options) => stripe.charges.list(params, options)),
    matches: (charge) => matches(charge, providerKey),
  });
}

function matches(charge: Stripe.Charge, providerKey: string): boolean {
  return charge.metadata?.[STRIPE_METADATA_KEYS.providerKey] === providerKey;
}

/** The first charge made under the key, should there be more than one. */
function oldest(charges: Stripe.Charge[]): Stripe.Charge | undefined {
  return charges.reduce<Stripe.Charge | undefined>(
    (first, c) => (first === undefined || c.created < first.created ? c : first),
    undefined,
  );
}

/** A search query string literal: single quotes, with `'` and `\` escaped. */
function quote(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** The account (or the emulator) has no Search API. */
function searchUnavailable(error: unknown): boolean {
  const cause = error instanceof ProviderTransientError ? null : error;
  if (cause instanceof StripeAdapterError && isStripeError(cause.cause)) {
    const stripeError = cause.cause;
    return stripeError.statusCode === 404 || stripeError.code === 'feature_not_enabled';
  }
  return false;
}
