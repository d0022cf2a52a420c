import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../src/errors.js';
import { canonicalJson, deriveProviderKey, validateChargeRequest } from '../../src/request.js';
import { fastValidateChargeRequest } from '../../src/requestFastPath.js';

const base = { merchantId: 'm_1', customerId: 'c_1', amountMinor: 100, currency: 'USD' };

describe('request fingerprint', () => {
  it('does not depend on the order of fields or metadata keys', () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1, maxLength: 10 }).filter((key) => key !== '__proto__'),
          fc.string({ maxLength: 20 }),
          { maxKeys: 10 },
        ),
        (metadata) => {
          const reversed = Object.fromEntries(Object.entries(metadata).reverse());
          const a = validateChargeRequest('k', { ...base, metadata });
          const b = validateChargeRequest('k', {
            metadata: reversed,
            currency: 'USD',
            amountMinor: 100,
            customerId: 'c_1',
            merchantId: 'm_1',
          });
          expect(a.fingerprint).toBe(b.fingerprint);
          expect(a.canonical).toBe(b.canonical);
        },
      ),
    );
  });

  it('changes when any field changes', () => {
    const fingerprint = (r: object) => validateChargeRequest('k', { ...base, ...r }).fingerprint;
    const original = fingerprint({});
    for (const change of [
      { amountMinor: 101 },
      { currency: 'EUR' },
      { customerId: 'c_2' },
      { merchantId: 'm_2' },
      { description: 'x' },
      { metadata: { a: 'b' } },
    ]) {
      expect(fingerprint(change)).not.toBe(original);
    }
  });

  it('canonical JSON sorts keys at every level and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, { z: 1, y: 2 }] } })).toBe(
      '{"a":{"c":[2,{"y":2,"z":1}]},"b":1}',
    );
  });
});

/** The issues a refused request names; fails the test if the request is accepted. */
function issuesOf(request: unknown): Array<{ field: string; message: string }> {
  try {
    validateChargeRequest('k', request);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).httpStatus).toBe(400);
    return [...(error as InvalidRequestError).issues];
  }
  throw new Error(`accepted ${JSON.stringify(request)}`);
}

describe('merchant and customer ids are kept exactly or refused', () => {
  it('refuses acme\\u00a0 rather than merging it with acme', () => {
    expect(validateChargeRequest('k', { ...base, merchantId: 'acme' }).request.merchantId).toBe(
      'acme',
    );
    expect(issuesOf({ ...base, merchantId: 'acme\u00a0' })).toEqual([
      { field: 'merchantId', message: 'must not start or end with whitespace' },
    ]);
  });

  it.each([
    ['a trailing space', 'acme '],
    ['a leading space', ' acme'],
    ['only spaces', '   '],
    ['a leading tab', '\tacme'],
    ['a trailing newline', 'acme\n'],
    ['a trailing carriage return', 'acme\r'],
    ['a leading no-break space', '\u00a0acme'],
    ['a trailing em space', 'acme\u2003'],
    ['a leading byte order mark', '\ufeffacme'],
    ['a trailing ideographic space', 'acme\u3000'],
    ['a trailing line separator', 'acme\u2028'],
  ])('refuses an id with %s', (_name, id) => {
    expect(issuesOf({ ...base, merchantId: id })).toEqual([
      { field: 'merchantId', message: 'must not start or end with whitespace' },
    ]);
    expect(issuesOf({ ...base, customerId: id })).toEqual([
      { field: 'customerId', message: 'must not start or end with whitespace' },
    ]);
  });

  it.each([
    ['a tab', 'ac\tme'],
    ['a newline', 'ac\nme'],
    ['an escape', 'ac\u001bme'],
    ['a DEL', 'ac\u007fme'],
    ['a C1 next-line', 'ac\u0085me'],
    ['a C1 control', 'ac\u009fme'],
  ])('refuses an id containing %s', (_name, id) => {
    expect(issuesOf({ ...base, customerId: id })).toEqual([
      { field: 'customerId', message: 'must not contain control characters' },
    ]);
  });

  it('keeps ids exactly, inner spaces and non-ASCII included', () => {
    for (const id of ['acme', 'Acme Ltd', 'acme\u00a0ltd', 'café', 'm_😀', 'x'.repeat(255)]) {
      const { request } = validateChargeRequest('k', { ...base, merchantId: id, customerId: id });
      expect(request.merchantId).toBe(id);
      expect(request.customerId).toBe(id);
    }
  });
});

describe('metadata', () => {
  it('refuses a __proto__ key, naming it, instead of dropping it', () => {
    const body = JSON.parse(
      `{"merchantId":"m_1","customerId":"c_1","amountMinor":100,"currency":"USD","metadata":{"__proto__":"x"}}`,
    ) as unknown;
    expect(issuesOf(body)).toEqual([
      { field: 'metadata.__proto__', message: 'must not be "__proto__"' },
    ]);
  });

  it('keeps keys such as constructor and toString as data', () => {
    const metadata = JSON.parse(
      '{"constructor":"c","toString":"t","hasOwnProperty":"h","valueOf":"v"}',
    ) as Record<string, string>;
    const validated = validateChargeRequest('k', { ...base, metadata });
    expect(validated.canonical).toBe(
      '{"amountMinor":100,"currency":"USD","customerId":"c_1","merchantId":"m_1",' +
        '"metadata":{"constructor":"c","hasOwnProperty":"h","toString":"t","valueOf":"v"}}',
    );
    expect(Object.entries(validated.request.metadata ?? {})).toEqual([
      ['constructor', 'c'],
      ['toString', 't'],
      ['hasOwnProperty', 'h'],
      ['valueOf', 'v'],
    ]);
    expect(JSON.parse(JSON.stringify(validated.request.metadata))).toEqual(metadata);
    expect(
      validateChargeRequest('k', { ...base, metadata: { constructor: 'd' } }).fingerprint,
    ).not.toBe(validateChargeRequest('k', base).fingerprint);
  });

  it('treats empty metadata as absent', () => {
    const without = validateChargeRequest('k', base);
    const empty = validateChargeRequest('k', { ...base, metadata: {} });
    expect(empty.fingerprint).toBe(without.fingerprint);
    expect(empty.canonical).toBe(without.canonical);
    expect('metadata' in empty.request).toBe(false);
  });
});

describe('currency', () => {
  it.each(['NGN', 'USD', 'JPY', 'EUR', 'XOF', 'XAF', 'XPF', 'XCD'])('accepts %s', (currency) => {
    expect(validateChargeRequest('k', { ...base, currency }).request.currency).toBe(currency);
  });

  // XCG (Caribbean guilder, ISO 4217 since 2025) is newer than currency-codes' data; ANG, which
  // it replaces, still circulates beside it.
  it.each(['XCG', 'ANG'])('accepts %s, on the fast path and through the schema', (currency) => {
    expect(validateChargeRequest('k', { ...base, currency }).request.currency).toBe(currency);
    expect(fastValidateChargeRequest('k', { ...base, currency })?.request.currency).toBe(currency);
  });

  it.each([
    ['XYZ', 'not a code'],
    ['XCX', 'not a code, beside XCD and XCG'],
    ['QQQ', 'not a code'],
    ['HRK', 'withdrawn'],
    ['VEF', 'withdrawn'],
    ['XTS', 'for testing'],
    ['XXX', 'no currency'],
    ['XAU', 'gold'],
    ['XDR', 'an IMF unit'],
    ['XBA', 'a bond-market unit'],
  ])('refuses %s (%s)', (currency) => {
    expect(issuesOf({ ...base, currency })).toEqual([
      { field: 'currency', message: 'must be an active ISO 4217 currency code' },
    ]);
  });

  it('still asks for three upper-case letters first', () => {
    expect(issuesOf({ ...base, currency: 'ngn' })).toEqual([
      { field: 'currency', message: 'must be three upper-case letters (ISO 4217)' },
    ]);
  });
});

describe('provider key', () => {
  it('is stable, opaque, short, and distinct per scope and per charge', () => {
    const key = deriveProviderKey('m_1', 'charge', 'customer@example.com', 'c1');
    expect(deriveProviderKey('m_1', 'charge', 'customer@example.com', 'c1')).toBe(key);
    expect(key).not.toContain('customer');
    expect(key.length).toBeLessThanOrEqual(255);
    expect(deriveProviderKey('m_2', 'charge', 'customer@example.com', 'c1')).not.toBe(key);
    expect(deriveProviderKey('m_1', 'refund', 'customer@example.com', 'c1')).not.toBe(key);
    expect(deriveProviderKey('m_1', 'charge', 'customer@example.com', 'c2')).not.toBe(key);
  });
});
