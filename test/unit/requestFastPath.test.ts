import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { validateWithSchema, type ValidatedRequest } from '../../src/request.js';
import { fastValidateChargeRequest } from '../../src/requestFastPath.js';

// The fast path must answer exactly as the schema does: for every request it takes, the same
// request object (fields, their order, metadata without a prototype), the same canonical text and
// fingerprint; and it must take the ordinary valid request, or it saves nothing.

/** Everything observable about a validated request, key order included. */
function observable(v: ValidatedRequest) {
  const metadata = v.request.metadata;
  return {
    key: v.key,
    fields: Object.keys(v.request),
    json: JSON.stringify(v.request),
    metadataPrototype:
      metadata === undefined ? 'absent' : (Object.getPrototypeOf(metadata) as unknown),
    canonical: v.canonical,
    fingerprint: v.fingerprint,
  };
}

function schemaAnswer(key: unknown, request: unknown) {
  try {
    return observable(validateWithSchema(key, request));
  } catch {
    return 'refused';
  }
}

const text = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom(' m', 'm ', '\u00a0m', 'a\u0000b', '\ud800', 'm\u0007', '__proto__', ''),
  fc.string({ minLength: 250, maxLength: 260 }),
);

const requestLike = fc.record(
  {
    merchantId: fc.oneof(text, fc.constant('m_1'), fc.integer()),
    customerId: fc.oneof(text, fc.constant('c_42')),
    amountMinor: fc.oneof(
      fc.integer({ min: -5, max: 1_000_000 }),
      fc.double(),
      fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, NaN, -0, '100'),
    ),
    currency: fc.oneof(fc.constantFrom('NGN', 'USD', 'XAU', 'HRK', 'usd', 'EURO'), text),
    description: fc.oneof(
      fc.constant(undefined),
      text,
      fc.string({ minLength: 999, maxLength: 1001 }),
    ),
    metadata: fc.oneof(
      fc.constant(undefined),
      fc.dictionary(text, fc.oneof(text, fc.integer()), { maxKeys: 6 }),
      fc.dictionary(
        fc.string({ minLength: 39, maxLength: 41 }),
        fc.string({ minLength: 499, maxLength: 501 }),
        { maxKeys: 2 },
      ),
      fc.dictionary(fc.string({ minLength: 1, maxLength: 3 }), fc.string(), {
        minKeys: 49,
        maxKeys: 52,
      }),
      fc.constantFrom([], null, 'x', JSON.parse('{"__proto__":"x"}') as unknown),
      fc.constantFrom({ a: '\ud800' }, { a: 'x\u0000' }, { '\ud800': 'a' }, { '': 'a' }),
    ),
    extra: fc.string(),
  },
  { requiredKeys: ['merchantId', 'customerId', 'amountMinor', 'currency'] },
);

const validRequest = fc.record(
  {
    merchantId: fc.constantFrom('m_1', 'merchant-ü', '42'),
    customerId: fc.stringMatching(/^[a-z0-9_]{1,20}$/),
    amountMinor: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    currency: fc.constantFrom('NGN', 'USD', 'EUR', 'JPY', 'XOF'),
    description: fc.string({ maxLength: 50 }),
    metadata: fc.dictionary(
      fc.stringMatching(/^[a-z0-9_]{1,10}$/).filter((k) => k !== '__proto__'),
      fc.string({ maxLength: 20 }),
      { maxKeys: 10 },
    ),
  },
  { requiredKeys: ['merchantId', 'customerId', 'amountMinor', 'currency'] },
);

/** A valid request with one field (or an extra one) set to something arbitrary. */
const oneFieldOff = fc
  .tuple(
    validRequest,
    fc.constantFrom(
      'merchantId',
      'customerId',
      'amountMinor',
      'currency',
      'description',
      'metadata',
      'extra',
    ),
    requestLike,
  )
  .map(([valid, field, wild]) => ({
    ...valid,
    [field]: (wild as Record<string, unknown>)[field === 'extra' ? 'merchantId' : field],
  }));

describe('the request fast path', () => {
  it('answers as the schema does whenever it answers at all', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constant('key-1'), text),
        fc.oneof(requestLike, oneFieldOff),
        (key, request) => {
          const fast = fastValidateChargeRequest(key, request);
          if (fast === null) return;
          expect(observable(fast)).toEqual(schemaAnswer(key, request));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('takes every plainly valid request, with the schema’s result', () => {
    fc.assert(
      fc.property(validRequest, (request) => {
        const fast = fastValidateChargeRequest('key-1', request);
        expect(fast).not.toBeNull();
        expect(observable(fast as ValidatedRequest)).toEqual(schemaAnswer('key-1', request));
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves what it cannot vouch for to the schema', () => {
    const valid = { merchantId: 'm_1', customerId: 'c', amountMinor: 1, currency: 'USD' };
    expect(fastValidateChargeRequest('', valid)).toBeNull();
    expect(fastValidateChargeRequest('k', new Map())).toBeNull();
    expect(fastValidateChargeRequest('k', { ...valid, amount: 1 })).toBeNull();
    const ownProto: unknown = JSON.parse('{"__proto__":"x"}');
    expect(fastValidateChargeRequest('k', { ...valid, metadata: ownProto })).toBeNull();
    expect(fastValidateChargeRequest('k', Object.assign(Object.create({ a: 1 }), valid))).toBe(
      null,
    );
  });
});
