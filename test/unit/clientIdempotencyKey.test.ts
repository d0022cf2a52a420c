import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isValidIdempotencyKey } from '../../src/idempotencyKey.js';
import { validateChargeRequest } from '../../src/request.js';
import { InvalidRequestError } from '../../src/errors.js';

const request = { merchantId: 'm_1', customerId: 'c_1', amountMinor: 100, currency: 'NGN' };

/** What the engine's validation says about a key: the client's check must say the same. */
function engineAccepts(key: unknown): boolean {
  try {
    validateChargeRequest(key, request);
    return true;
  } catch (error) {
    if (!(error instanceof InvalidRequestError)) throw error;
    return !error.issues.some((issue) => issue.field === 'idempotencyKey');
  }
}

describe('isValidIdempotencyKey (shared by the client and the engine)', () => {
  it('accepts 1-255 printable ASCII characters and nothing else', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey(' ~')).toBe(true);
    expect(isValidIdempotencyKey('k'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('k'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('clé')).toBe(false);
    expect(isValidIdempotencyKey('a\tb')).toBe(false);
    expect(isValidIdempotencyKey('a\x7F')).toBe(false);
    expect(isValidIdempotencyKey(42)).toBe(false);
    expect(isValidIdempotencyKey(undefined)).toBe(false);
  });

  it('agrees with the engine on every key', () => {
    const keys = fc.oneof(
      fc.string({ unit: 'binary-ascii', maxLength: 260 }),
      fc.string({ unit: 'grapheme', maxLength: 10 }),
      fc.string({ minLength: 250, maxLength: 260 }),
      fc.constantFrom<unknown>(null, 1, {}, ['k']),
    );
    fc.assert(
      fc.property(keys, (key) => {
        expect(isValidIdempotencyKey(key)).toBe(engineAccepts(key));
      }),
      { numRuns: 500 },
    );
  });
});
