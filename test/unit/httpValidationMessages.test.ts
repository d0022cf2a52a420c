import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidRequestError, type FieldIssue } from '../../src/errors.js';
import { MAX_REPORTED_ISSUES, validateChargeRequest } from '../../src/request.js';

/**
 * The messages a client reads in a 400 are the project's own ("must be a string"), never
 * zod's ("Expected string, received number"), and each names the field it is about.
 */

const valid = { merchantId: 'm_1', customerId: 'c_1', amountMinor: 100, currency: 'NGN' };

/** The issues of a refused request; fails the test if it is accepted. */
function issuesOf(request: unknown, key: unknown = 'k'): FieldIssue[] {
  try {
    validateChargeRequest(key, request);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return [...(error as InvalidRequestError).issues];
  }
  throw new Error(`accepted ${JSON.stringify(request)}`);
}

/** zod's own phrasing, which must never reach a client. */
const ZOD_WORDING = /Expected|received|Unrecognized|String must contain|Invalid input|Required/;

describe('validation messages', () => {
  it.each([
    ['a number for a string', { customerId: 42 }, 'customerId', 'must be a string'],
    ['null for a string', { customerId: null }, 'customerId', 'must be a string'],
    ['a string for a number', { amountMinor: '100' }, 'amountMinor', 'must be a number'],
    ['an array for a number', { amountMinor: [1] }, 'amountMinor', 'must be a number'],
    ['a missing field', { currency: undefined }, 'currency', 'is required'],
    ['a number for a description', { description: 7 }, 'description', 'must be a string'],
    ['a string for metadata', { metadata: 'x' }, 'metadata', 'must be an object of strings'],
    ['an array for metadata', { metadata: ['x'] }, 'metadata', 'must be an object of strings'],
    ['a number in metadata', { metadata: { a: 1 } }, 'metadata.a', 'must be a string'],
    ['an empty metadata key', { metadata: { '': 'v' } }, 'metadata.', 'must not be empty'],
    [
      'a metadata key too long',
      { metadata: { ['k'.repeat(41)]: 'v' } },
      `metadata.${'k'.repeat(41)}`,
      'must be at most 40 characters',
    ],
    [
      'a metadata value too long',
      { metadata: { a: 'v'.repeat(501) } },
      'metadata.a',
      'must be at most 500 characters',
    ],
    ['an unknown field', { amount: 100 }, 'amount', 'is not a known field'],
    ['an unknown field named like an old one', { request: 1 }, 'request', 'is not a known field'],
  ])('%s', (_name, change, field, message) => {
    expect(issuesOf({ ...valid, ...change })).toEqual([{ field, message }]);
  });

  it('says what a request that is no object is, on the request', () => {
    expect(issuesOf('charge me')).toEqual([{ field: 'request', message: 'must be an object' }]);
    expect(issuesOf(null)).toEqual([{ field: 'request', message: 'must be an object' }]);
  });

  it('says what a key that is no string is, on the key', () => {
    expect(issuesOf(valid, 12345)).toEqual([
      { field: 'idempotencyKey', message: 'must be a string' },
    ]);
    expect(() => validateChargeRequest(undefined, valid)).toThrow(
      expect.objectContaining({ issues: [{ field: 'idempotencyKey', message: 'is required' }] }),
    );
  });

  it('names each unknown field on its own, up to the cap', () => {
    const unknown = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x${i}`, i]));
    const issues = issuesOf({ ...valid, amountMinor: -1, ...unknown });
    expect(issues).toHaveLength(MAX_REPORTED_ISSUES);
    expect(issues[0]).toEqual({ field: 'amountMinor', message: 'must be positive' });
    expect(issues[1]).toEqual({ field: 'x0', message: 'is not a known field' });
  });

  it('never speaks zod, whatever the fields hold', () => {
    const field = fc.constantFrom(
      'merchantId',
      'customerId',
      'amountMinor',
      'currency',
      'description',
      'metadata',
      'other',
    );
    fc.assert(
      fc.property(fc.dictionary(field, fc.jsonValue(), { minKeys: 1 }), (change) => {
        let issues: FieldIssue[] = [];
        try {
          validateChargeRequest('k', { ...valid, ...change });
        } catch (error) {
          issues = [...(error as InvalidRequestError).issues];
        }
        for (const issue of issues) {
          expect(issue.message).not.toMatch(ZOD_WORDING);
          expect(issue.field).not.toBe('request');
        }
      }),
      { numRuns: 500 },
    );
  });
});
