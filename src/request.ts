import { createHash } from 'node:crypto';
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

const nonEmptyId = z
  .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
  .trim()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine(storable, UNSTORABLE_MESSAGE);

/** True for a well-formed idempotency key: 1–255 printable ASCII characters. */
export function isValidIdempotencyKey(key: unknown): key is string {
  return idempotencyKeySchema.safeParse(key).success;
}

const chargeRequestSchema = z
  .object({
    merchantId: nonEmptyId,
    customerId: nonEmptyId,
    amountMinor: z
      .number({ required_error: 'is required', invalid_type_error: 'must be a number' })
      .int('must be an integer')
      .positive('must be positive')
      .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer'),
    currency: z
      .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
      .regex(/^[A-Z]{3}$/, 'must be three upper-case letters (ISO 4217)'),
    description: z
      .string()
      .max(1000, 'must be at most 1000 characters')
      .refine(storable, UNSTORABLE_MESSAGE)
      .optional(),
    metadata: z
      .record(
        z.string().min(1).max(METADATA_LIMITS.maxKeyLength).refine(storable, UNSTORABLE_MESSAGE),
        z.string().max(METADATA_LIMITS.maxValueLength).refine(storable, UNSTORABLE_MESSAGE),
      )
      .refine((m) => Object.keys(m).length <= METADATA_LIMITS.maxKeys, {
        message: `must have at most ${METADATA_LIMITS.maxKeys} keys`,
      })
      .optional(),
  })
  .strict();

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
