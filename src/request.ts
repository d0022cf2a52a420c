import { createHash } from 'node:crypto';
import { codes as iso4217Codes } from 'currency-codes';
import { z } from 'zod';
import { InvalidRequestError, type FieldIssue } from './errors.js';

/** Bounds on metadata, so a stored request stays small (the same limits Stripe applies). */
export const METADATA_LIMITS = { maxKeys: 50, maxKeyLength: 40, maxValueLength: 500 } as const;

const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;

// PostgreSQL text holds neither NUL nor unpaired UTF-16 surrogates: refuse them here, as invalid
// input, rather than let the database fail the claim.
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const storable = (text: string) => !text.includes('\u0000') && !UNPAIRED_SURROGATE.test(text);
const UNSTORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

const idempotencyKeySchema = z
  .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(PRINTABLE_ASCII, 'must be printable ASCII');

// An id is a scope: it is kept exactly as sent or refused, never changed, so two ids that differ
// never share keys. Invisible edges (any Unicode white space, BOM included) and control characters
// are refused rather than trimmed or stripped.
const EDGE_WHITESPACE = /^[\s\p{White_Space}]|[\s\p{White_Space}]$/u;
const CONTROL_CHARACTER = /\p{Cc}/u;

const exactId = z
  .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine(storable, UNSTORABLE_MESSAGE)
  .refine((id) => !EDGE_WHITESPACE.test(id), 'must not start or end with whitespace')
  .refine((id) => !CONTROL_CHARACTER.test(id), 'must not contain control characters');

/**
 * ISO 4217 X-codes that are money. The rest of the X range is not charged in: precious metals
 * (XAU, XAG, XPD, XPT), bond-market and accounting units (XBA–XBD, XDR, XSU, XUA), XTS (testing)
 * and XXX (no currency). currency-codes gives their "N.A." minor unit as 0, like XOF's, so its
 * data alone cannot tell them apart.
 */
const X_CODES_THAT_ARE_MONEY: ReadonlySet<string> = new Set(['XAF', 'XCD', 'XCG', 'XOF', 'XPF']);

/**
 * Currencies a charge may be made in: ISO 4217 list one (the active codes; withdrawn codes such as
 * HRK are not on it) as shipped by currency-codes, less the X-codes that are not money.
 */
const CHARGE_CURRENCIES: ReadonlySet<string> = new Set(
  iso4217Codes().filter((code) => !code.startsWith('X') || X_CODES_THAT_ARE_MONEY.has(code)),
);

const METADATA_PROTO_KEY = '__proto__';

/** True for a well-formed idempotency key: 1–255 printable ASCII characters. */
export function isValidIdempotencyKey(key: unknown): key is string {
  return idempotencyKeySchema.safeParse(key).success;
}

/**
 * Copies validated metadata into an object with no prototype, so keys such as `constructor` or
 * `toString` are plain data. Empty metadata is the same request as none: it becomes `undefined`.
 */
function toMetadata(entries: Record<string, string>): Record<string, string> | undefined {
  const keys = Object.keys(entries);
  if (keys.length === 0) return undefined;
  const metadata = Object.create(null) as Record<string, string>;
  for (const key of keys) {
    Object.defineProperty(metadata, key, {
      value: entries[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return metadata;
}

const chargeRequestSchema = z
  .object({
    merchantId: exactId,
    customerId: exactId,
    amountMinor: z
      .number({ required_error: 'is required', invalid_type_error: 'must be a number' })
      .int('must be an integer')
      .positive('must be positive')
      .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer'),
    currency: z
      .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
      .regex(/^[A-Z]{3}$/, 'must be three upper-case letters (ISO 4217)')
      .refine((code) => CHARGE_CURRENCIES.has(code), 'must be an active ISO 4217 currency code'),
    description: z
      .string()
      .max(1000, 'must be at most 1000 characters')
      .refine(storable, UNSTORABLE_MESSAGE)
      .optional(),
    metadata: z
      .record(
        z
          .string()
          .min(1)
          .max(METADATA_LIMITS.maxKeyLength)
          .refine(storable, UNSTORABLE_MESSAGE)
          // zod drops this key from the records it builds, and so would any plain object: refuse
          // it rather than lose it.
          .refine((key) => key !== METADATA_PROTO_KEY, `must not be "${METADATA_PROTO_KEY}"`),
        z.string().max(METADATA_LIMITS.maxValueLength).refine(storable, UNSTORABLE_MESSAGE),
      )
      .refine((m) => Object.keys(m).length <= METADATA_LIMITS.maxKeys, {
        message: `must have at most ${METADATA_LIMITS.maxKeys} keys`,
      })
      .transform(toMetadata)
      .optional(),
  })
  .strict()
  // Absent optional fields are left out, so the request has no `metadata: undefined` either.
  .transform(({ description, metadata, ...required }): ChargeRequest => ({
    ...required,
    ...(description === undefined ? {} : { description }),
    ...(metadata === undefined ? {} : { metadata }),
  }));

/** What a caller asks chargeonce to charge. */
export type ChargeRequest = {
  merchantId: string;
  customerId: string;
  /** Amount in the currency's minor unit (kobo, cents): a positive safe integer. */
  amountMinor: number;
  /** ISO 4217 code, upper case. */
  currency: string;
  description?: string;
  metadata?: Record<string, string>;
};

/** A validated request with its canonical text and fingerprint. */
export type ValidatedRequest = {
  key: string;
  request: ChargeRequest;
  /** The request as canonical JSON: keys sorted at every level, absent fields left out. */
  canonical: string;
  /** sha256 of `canonical`, hex. Same request, same fingerprint, whatever the key order. */
  fingerprint: string;
};

function toIssues(error: z.ZodError, prefix?: string): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = issue.path.join('.');
    const field = prefix ? (path ? `${prefix}.${path}` : prefix) : path || 'request';
    return { field, message: issue.message };
  });
}

/** Serializes a JSON value with object keys sorted, so equal requests give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** sha256 hex of a string. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Validates the key and the request before anything is written.
 * @throws {InvalidRequestError} naming every invalid field; the key is not consumed.
 */
export function validateChargeRequest(key: unknown, request: unknown): ValidatedRequest {
  const issues: FieldIssue[] = [];
  const parsedKey = idempotencyKeySchema.safeParse(key);
  if (!parsedKey.success) issues.push(...toIssues(parsedKey.error, 'idempotencyKey'));
  const parsedRequest = chargeRequestSchema.safeParse(request);
  if (!parsedRequest.success) issues.push(...toIssues(parsedRequest.error));
  if (!parsedKey.success || !parsedRequest.success) {
    // One issue per field: the first rule it broke.
    const seen = new Set<string>();
    throw new InvalidRequestError(
      issues.filter((issue) => !seen.has(issue.field) && Boolean(seen.add(issue.field))),
    );
  }
  const canonical = canonicalJson(parsedRequest.data);
  return {
    key: parsedKey.data,
    request: parsedRequest.data,
    canonical,
    fingerprint: sha256Hex(canonical),
  };
}

/**
 * The key the provider dedupes on. Derived from the scoped key and the charge it guards, so it is
 * stable across every retry, opaque (no merchant or customer data leaks into provider logs), and
 * new if a reaped key is ever used again.
 */
export function deriveProviderKey(
  merchantId: string,
  operation: string,
  key: string,
  chargeId: string,
): string {
  return `co_${sha256Hex([merchantId, operation, key, chargeId].join('\u0000'))}`;
}
