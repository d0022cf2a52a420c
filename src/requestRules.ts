import { codes as iso4217Codes } from 'currency-codes';

// The rules of a charge request, shared by its schema (which words every refusal) and by its
// fast path (which accepts a valid request without the schema library's cost).

/** Bounds on metadata, so a stored request stays small (the same limits Stripe applies). */
export const METADATA_LIMITS = { maxKeys: 50, maxKeyLength: 40, maxValueLength: 500 } as const;

export const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;

// PostgreSQL text holds neither NUL nor unpaired UTF-16 surrogates: refuse them here, as invalid
// input, rather than let the database fail the claim.
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
export const storable = (text: string) =>
  !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);
export const UNSTORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

// An id is a scope: it is kept exactly as sent or refused, never changed, so two ids that differ
// never share keys. Invisible edges (any Unicode white space, BOM included) and control characters
// are refused rather than trimmed or stripped.
export const EDGE_WHITESPACE = /^[\s\p{White_Space}]|[\s\p{White_Space}]$/u;
export const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * ISO 4217 X-codes that are money: the whole of the X range a charge may be made in, whatever
 * currency-codes ships. The rest of the X range is not charged in: precious metals (XAU, XAG,
 * XPD, XPT), bond-market and accounting units (XBA–XBD, XDR, XSU, XUA), XTS (testing) and XXX (no
 * currency). currency-codes gives their "N.A." minor unit as 0, like XOF's, so its data alone
 * cannot tell them apart; and its data may lag ISO's list (currency-codes 2.2 has no XCG, the
 * Caribbean guilder of 2025), so these are added from here rather than filtered from there.
 */
const X_CODES_THAT_ARE_MONEY: readonly string[] = ['XAF', 'XCD', 'XCG', 'XOF', 'XPF'];

/**
 * Currencies a charge may be made in: ISO 4217 list one (the active codes; withdrawn codes such as
 * HRK are not on it) as shipped by currency-codes outside the X range, and the X-codes above.
 * ANG stays while it circulates beside XCG, as long as currency-codes lists it.
 */
export const CHARGE_CURRENCIES: ReadonlySet<string> = new Set([
  ...iso4217Codes().filter((code) => !code.startsWith('X')),
  ...X_CODES_THAT_ARE_MONEY,
]);

export const METADATA_PROTO_KEY = '__proto__';
