import { hash } from 'node:crypto';
import { z } from 'zod';
import { InvalidRequestError, type FieldIssue } from './errors.js';
import { fastValidateChargeRequest } from './requestFastPath.js';
import {
  CHARGE_CURRENCIES,
  CONTROL_CHARACTER,
  EDGE_WHITESPACE,
  METADATA_LIMITS,
  METADATA_PROTO_KEY,
  PRINTABLE_ASCII,
  storable,
  UNSTORABLE_MESSAGE,
} from './requestRules.js';

export { METADATA_LIMITS } from './requestRules.js';

const idempotencyKeySchema = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(PRINTABLE_ASCII, 'must be printable ASCII');

/** An id the caller chose: stored and compared exactly, so no edge whitespace or controls. */
export const exactId = z
  .string()
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .refine(storable, UNSTORABLE_MESSAGE)
  .refine((id) => !EDGE_WHITESPACE.test(id), 'must not start or end with whitespace')
  .refine((id) => !CONTROL_CHARACTER.test(id), 'must not contain control characters');

// The rule itself lives in a file without dependencies, so the client can use it too.
export { isValidIdempotencyKey } from './idempotencyKey.js';

/**
 * What is wrong with an idempotency key, in the words `validateChargeRequest` uses (field
 * `idempotencyKey`); empty for a well-formed key. Lets an edge refuse a bad key before it reads
 * a body.
 */
export function idempotencyKeyIssues(key: unknown): FieldIssue[] {
  const parsed = idempotencyKeySchema.safeParse(key, { errorMap: projectErrorMap });
  return parsed.success ? [] : collectIssues([parsed.error], 'idempotencyKey');
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

/** One metadata entry: its key and its value, each a bounded, storable string. */
const metadataEntries = z.record(
  z
    .string()
    .min(1, 'must not be empty')
    .max(METADATA_LIMITS.maxKeyLength, `must be at most ${METADATA_LIMITS.maxKeyLength} characters`)
    .refine(storable, UNSTORABLE_MESSAGE)
    // zod drops this key from the records it builds, and so would any plain object: refuse it
    // rather than lose it.
    .refine((key) => key !== METADATA_PROTO_KEY, `must not be "${METADATA_PROTO_KEY}"`),
  z
    .string()
    .max(
      METADATA_LIMITS.maxValueLength,
      `must be at most ${METADATA_LIMITS.maxValueLength} characters`,
    )
    .refine(storable, UNSTORABLE_MESSAGE),
);

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** True when `object` has more than `limit` own keys; stops counting at `limit + 1`. */
function hasMoreKeysThan(object: Record<string, unknown>, limit: number): boolean {
  let count = 0;
  for (const key in object) {
    if (Object.hasOwn(object, key) && ++count > limit) return true;
  }
  return false;
}

// The keys are counted before any entry is looked at: 12,000 keys are refused with one issue,
// not checked one by one (a refusal must cost no more than the limit it enforces).
const metadataSchema = z
  .custom<Record<string, unknown>>(isPlainObject, 'must be an object of strings')
  .refine((metadata) => !hasMoreKeysThan(metadata, METADATA_LIMITS.maxKeys), {
    message: `must have at most ${METADATA_LIMITS.maxKeys} keys`,
  })
  .pipe(metadataEntries)
  .transform(toMetadata)
  .optional();

const chargeRequestSchema = z
  .object({
    merchantId: exactId,
    customerId: exactId,
    amountMinor: z
      .number()
      .int('must be an integer')
      .positive('must be positive')
      .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer'),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be three upper-case letters (ISO 4217)')
      .refine((code) => CHARGE_CURRENCIES.has(code), 'must be an active ISO 4217 currency code'),
    description: z
      .string()
      .max(1000, 'must be at most 1000 characters')
      .refine(storable, UNSTORABLE_MESSAGE)
      .optional(),
    metadata: metadataSchema,
    capture: z.boolean().optional(),
  })
  .strict()
  // Absent optional fields are left out, so the request has no `metadata: undefined` either;
  // `capture: true` is the default, the same request as none (and the same fingerprint).
  .transform(({ description, metadata, capture, ...required }): ChargeRequest => ({
    ...required,
    ...(description === undefined ? {} : { description }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(capture === false ? { capture: false } : {}),
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
  /**
   * `false`: authorize only, and take the money later with `processCapture`. Absent (or `true`):
   * authorize and capture at once (validation leaves `true` out: the same request as none).
   */
  capture?: boolean;
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

/**
 * The most issues a refusal names. A request breaks few rules by mistake; past this many it is
 * noise (or an attack), and naming each would make the refusal as large as the request.
 */
export const MAX_REPORTED_ISSUES = 20;

/** Field names are echoed back; a made-up one (a metadata key, an unknown field) is cut short. */
const MAX_FIELD_NAME_LENGTH = 100;

export const UNKNOWN_FIELD_MESSAGE = 'is not a known field';

/**
 * zod's checks in the project's own words: a message given in the schema wins; this says the
 * rest ("must be a string", not zod's "Expected string, received number").
 */
const projectErrorMap: z.ZodErrorMap = (issue) => ({ message: describeIssue(issue) });

function describeIssue(issue: z.ZodIssueOptionalMessage): string {
  if (issue.code === z.ZodIssueCode.invalid_type) {
    if (issue.received === z.ZodParsedType.undefined) return 'is required';
    return EXPECTED_TYPE[issue.expected] ?? 'is of the wrong type';
  }
  if (issue.code === z.ZodIssueCode.too_small) {
    if (issue.type !== 'string') return `must be at least ${issue.minimum}`;
    return Number(issue.minimum) <= 1
      ? 'must not be empty'
      : `must be at least ${issue.minimum} characters`;
  }
  if (issue.code === z.ZodIssueCode.too_big) {
    return issue.type === 'string'
      ? `must be at most ${issue.maximum} characters`
      : `must be at most ${issue.maximum}`;
  }
  if (issue.code === z.ZodIssueCode.unrecognized_keys) return UNKNOWN_FIELD_MESSAGE;
  // Every other check of this schema carries its own message.
  return 'is invalid';
}

const EXPECTED_TYPE: Partial<Record<z.ZodParsedType, string>> = {
  string: 'must be a string',
  number: 'must be a number',
  integer: 'must be an integer',
  boolean: 'must be true or false',
  object: 'must be an object',
  array: 'must be an array',
};

/**
 * The issues of failed parses as field issues: one per field (the first rule it broke), an
 * unknown field named by its own name, at most `MAX_REPORTED_ISSUES` of them. It stops as soon
 * as it has enough, so its work is bounded however many issues zod found.
 */
function collectIssues(errors: readonly z.ZodError[], prefix?: string): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const seen = new Set<string>();
  const add = (path: readonly (string | number)[], message: string): boolean => {
    const field = fieldName(path, prefix);
    if (!seen.has(field)) {
      seen.add(field);
      issues.push({ field, message });
    }
    return issues.length < MAX_REPORTED_ISSUES;
  };
  for (const error of errors) {
    for (const issue of error.issues) {
      if (issue.code === z.ZodIssueCode.unrecognized_keys) {
        for (const key of issue.keys) {
          if (!add([...issue.path, key], UNKNOWN_FIELD_MESSAGE)) return issues;
        }
      } else if (!add(issue.path, issue.message)) {
        return issues;
      }
    }
  }
  return issues;
}

function fieldName(path: readonly (string | number)[], prefix: string | undefined): string {
  const joined = path.join('.');
  return shortFieldName(prefix ? (joined ? `${prefix}.${joined}` : prefix) : joined || 'request');
}

/** A field's name as an issue echoes it back: a made-up one is cut short. */
export function shortFieldName(field: string): string {
  return field.length > MAX_FIELD_NAME_LENGTH ? `${field.slice(0, MAX_FIELD_NAME_LENGTH)}…` : field;
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

/** sha256 hex of a string (one-shot `hash`: half the cost of a `Hash` object, on every claim). */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/**
 * Validates the key and the request before anything is written.
 * @throws {InvalidRequestError} naming every invalid field; the key is not consumed.
 */
export function validateChargeRequest(key: unknown, request: unknown): ValidatedRequest {
  return fastValidateChargeRequest(key, request) ?? validateWithSchema(key, request);
}

/**
 * {@link validateChargeRequest} through the schema alone: what the fast path must agree with,
 * and what words every refusal.
 */
export function validateWithSchema(key: unknown, request: unknown): ValidatedRequest {
  return validateKeyedRequest(chargeRequestSchema, key, request);
}

/**
 * Validates a key and a request of any operation against `schema`, in the project's words, and
 * gives the request's canonical text and fingerprint.
 * @throws {InvalidRequestError} naming every invalid field; nothing is written.
 */
export function validateKeyedRequest<T>(
  schema: z.ZodType<T, z.ZodTypeDef, unknown>,
  key: unknown,
  request: unknown,
): { key: string; request: T; canonical: string; fingerprint: string } {
  const parsedKey = idempotencyKeySchema.safeParse(key, { errorMap: projectErrorMap });
  const parsedRequest = schema.safeParse(request, { errorMap: projectErrorMap });
  if (!parsedKey.success || !parsedRequest.success) {
    throw new InvalidRequestError(
      [
        ...(parsedKey.success ? [] : collectIssues([parsedKey.error], 'idempotencyKey')),
        ...(parsedRequest.success ? [] : collectIssues([parsedRequest.error])),
      ].slice(0, MAX_REPORTED_ISSUES),
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
