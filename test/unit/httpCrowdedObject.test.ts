import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crowdedObjectIssue } from '../../src/http/crowdedObjectIssue.js';
import { METADATA_LIMITS } from '../../src/request.js';

const entries = (n: number, value: unknown = 'v') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));

const base = { customerId: 'c', amountMinor: 1, currency: 'NGN' };

describe('crowdedObjectIssue', () => {
  it('lets a body with metadata at the limit through', () => {
    const text = JSON.stringify({ ...base, metadata: entries(METADATA_LIMITS.maxKeys) });
    expect(crowdedObjectIssue(text)).toBeNull();
  });

  it('refuses metadata past the limit as validation would, whatever it holds', () => {
    for (const value of ['v', 1, { nested: true }, null]) {
      const text = JSON.stringify({ ...base, metadata: entries(12_000, value) });
      expect(crowdedObjectIssue(text)).toEqual({
        field: 'metadata',
        message: `must have at most ${METADATA_LIMITS.maxKeys} keys`,
      });
    }
  });

  it('finds metadata by its decoded name, and is not fooled by keys or strings that look alike', () => {
    const escaped = `{"meta\\u0064ata":${JSON.stringify(entries(51))}}`;
    expect(crowdedObjectIssue(escaped)?.field).toBe('metadata');
    const inString = JSON.stringify({ description: `{${'"a":1,'.repeat(100)}}`, ...base });
    expect(crowdedObjectIssue(inString)).toBeNull();
    const quotes = JSON.stringify({ description: 'say \\"hi\\" {', metadata: entries(10) });
    expect(crowdedObjectIssue(quotes)).toBeNull();
  });

  it('refuses a body of thousands of fields, and any other crowded object', () => {
    expect(crowdedObjectIssue(JSON.stringify({ ...base, ...entries(5_000) }))).toEqual({
      field: 'body',
      message: `has more than ${METADATA_LIMITS.maxKeys} fields`,
    });
    expect(crowdedObjectIssue(JSON.stringify({ ...base, description: entries(60) }))).toEqual({
      field: 'description',
      message: `has an object of more than ${METADATA_LIMITS.maxKeys} members`,
    });
  });

  it('lets long arrays and deep nesting through: they are for JSON.parse and validation', () => {
    expect(
      crowdedObjectIssue(JSON.stringify({ a: Array.from({ length: 5_000 }, () => 1) })),
    ).toBeNull();
    expect(
      crowdedObjectIssue(JSON.stringify({ a: Array.from({ length: 100 }, () => entries(50)) })),
    ).toBeNull();
  });

  it('never refuses a JSON text whose objects are all within the limit', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        expect(crowdedObjectIssue(JSON.stringify(value))).toBeNull();
      }),
      { numRuns: 300 },
    );
  });
});
