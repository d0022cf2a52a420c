import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, deriveProviderKey, validateChargeRequest } from '../../src/request.js';

const base = { merchantId: 'm_1', customerId: 'c_1', amountMinor: 100, currency: 'USD' };

describe('request fingerprint', () => {
  it('does not depend on the order of fields or metadata keys', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), fc.string({ maxLength: 20 }), {
          maxKeys: 10,
        }),
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
