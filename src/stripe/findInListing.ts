import { ProviderTransientError } from '../provider/PaymentProvider.js';
import { StripeAdapterError } from './mapStripeError.js';

/** One page of a Stripe listing, newest first. */
export type ListingPage<T> = { data: T[]; has_more: boolean };

/** The parameters of one page request. */
export type ListingParams = { created: { gte: number }; limit: number; starting_after?: string };

const PAGE_SIZE = 100;

/**
 * The newest object of a Stripe listing that `matches`, among those created since
 * `reservedAt - clockSkewMs` (nothing made under a key is older than its reservation), page by
 * page, newest first; or null when the listing gets past that bound without one.
 *
 * @throws {StripeAdapterError} kind `lookup_incomplete`: `maxListPages` pages did not reach back
 * to the bound, so the listing cannot say the object is not there.
 * @throws {ProviderTransientError} the signal aborted between pages.
 */
export async function findInListing<T extends { id: string; created: number }>(args: {
  /** What is listed (`charges`, `refunds`), for the error message. */
  what: string;
  providerKey: string;
  reservedAt: Date;
  clockSkewMs: number;
  maxListPages: number;
  signal: AbortSignal;
  page: (params: ListingParams) => Promise<ListingPage<T>>;
  matches: (item: T) => boolean;
}): Promise<T | null> {
  const { signal } = args;
  // Stripe's `created` is in whole seconds.
  const since = Math.floor((args.reservedAt.getTime() - args.clockSkewMs) / 1000);
  let startingAfter: string | undefined;
  for (let page = 0; page < args.maxListPages; page++) {
    if (signal.aborted) throw new ProviderTransientError('timeout', { cause: signal.reason });
    const list = await args.page({
      created: { gte: since },
      limit: PAGE_SIZE,
      ...(startingAfter === undefined ? {} : { starting_after: startingAfter }),
    });
    for (const item of list.data) {
      // Newest first: past the bound, every object left is older still. Checked here as well
      // as asked of Stripe, for an API (or an emulator) that ignores `created`.
      if (item.created < since) return null;
      if (args.matches(item)) return item;
    }
    const last = list.data.at(-1);
    if (!list.has_more || last === undefined) return null;
    startingAfter = last.id;
  }
  throw new StripeAdapterError(
    'lookup_incomplete',
    `Listing Stripe ${args.what} for provider key ${JSON.stringify(args.providerKey)}: ${args.maxListPages} pages of ${PAGE_SIZE} did not reach back to the reservation (${args.reservedAt.toISOString()}), so the lookup cannot say it is not there. Raise maxListPages${args.what === 'charges' ? ', or enable the Search API' : ''}.`,
  );
}
