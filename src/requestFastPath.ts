import { hash } from 'node:crypto';
import { isValidIdempotencyKey } from './idempotencyKey.js';
import {
  CHARGE_CURRENCIES,
  CONTROL_CHARACTER,
  EDGE_WHITESPACE,
  METADATA_LIMITS,
  METADATA_PROTO_KEY,
  storable,
} from './requestRules.js';
import type { ChargeRequest, ValidatedRequest } from './request.js';

// Every charge, replays included, is validated before anything is sent: through the schema
// library that costs tens of microseconds, most of a replay's own CPU. This path checks the
// same rules by hand and builds the same result, for a request that passes them all; anything
// else (a broken rule, an unusual object) returns null and goes through the schema, which words
// every refusal. A property test holds the two to the same answers.

const FIELDS: ReadonlySet<string> = new Set([
  'merchantId',
  'customerId',
  'amountMinor',
  'currency',
  'description',
  'metadata',
]);

/** A plain object (an object literal or JSON.parse output): the only kind this path takes. */
function isPlainRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

function isExactId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length >= 1 &&
    value.length <= 255 &&
    storable(value) &&
    !EDGE_WHITESPACE.test(value) &&
    !CONTROL_CHARACTER.test(value)
  );
}

function isAmount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

function isDescription(value: unknown): value is string | undefined {
  return (
    value === undefined || (typeof value === 'string' && value.length <= 1000 && storable(value))
  );
}

/**
 * The keys of valid metadata (none when absent), in the order the schema copies them (for-in
 * order), or null when a rule is broken.
 */
function metadataKeys(value: unknown): string[] | null {
  if (value === undefined) return [];
  if (!isPlainRecord(value)) return null;
  const keys: string[] = [];
  for (const key in value) {
    if (keys.push(key) > METADATA_LIMITS.maxKeys) return null;
    const entry = value[key];
    if (
      key.length === 0 ||
      key.length > METADATA_LIMITS.maxKeyLength ||
      key === METADATA_PROTO_KEY ||
      !storable(key) ||
      typeof entry !== 'string' ||
      entry.length > METADATA_LIMITS.maxValueLength ||
      !storable(entry)
    ) {
      return null;
    }
  }
  return keys;
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The validated request, its canonical JSON and fingerprint, exactly as `validateChargeRequest`
 * builds them, or null when the request is not plainly valid.
 */
export function fastValidateChargeRequest(key: unknown, input: unknown): ValidatedRequest | null {
  if (!isValidIdempotencyKey(key) || key.length === 0 || !isPlainRecord(input)) return null;
  // for-in, as the schema looks for unknown fields.
  for (const field in input) if (!FIELDS.has(field)) return null;
  const { merchantId, customerId, amountMinor, currency, description, metadata } = input;
  if (
    !isExactId(merchantId) ||
    !isExactId(customerId) ||
    !isAmount(amountMinor) ||
    typeof currency !== 'string' ||
    !CHARGE_CURRENCIES.has(currency) ||
    !isDescription(description)
  ) {
    return null;
  }
  const metadataOrder = metadataKeys(metadata);
  if (metadataOrder === null) return null;

  const request: ChargeRequest = { merchantId, customerId, amountMinor, currency };
  if (description !== undefined) request.description = description;
  let metadataJson = '';
  if (metadataOrder.length > 0) {
    const entries = metadata as Record<string, string>;
    // A copy without a prototype, in the schema's order (the response body keeps it).
    const copy = Object.create(null) as Record<string, string>;
    for (const metadataKey of metadataOrder) {
      Object.defineProperty(copy, metadataKey, {
        value: entries[metadataKey],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    request.metadata = copy;
    // Sorted for the canonical text.
    const parts = [...metadataOrder]
      .sort(byCodeUnits)
      .map((k) => `${JSON.stringify(k)}:${JSON.stringify(copy[k])}`);
    metadataJson = `,"metadata":{${parts.join(',')}}`;
  }
  // Field names in sorted order: amountMinor, currency, customerId, description, merchantId,
  // metadata.
  const canonical =
    `{"amountMinor":${JSON.stringify(amountMinor)},"currency":${JSON.stringify(currency)}` +
    `,"customerId":${JSON.stringify(customerId)}` +
    (description === undefined ? '' : `,"description":${JSON.stringify(description)}`) +
    `,"merchantId":${JSON.stringify(merchantId)}${metadataJson}}`;
  return {
    key,
    request,
    canonical,
    // One-shot: half the cost of a Hash object (request.ts's sha256Hex, which imports this file).
    fingerprint: hash('sha256', canonical, 'hex'),
  };
}
