import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { objectMembersIssue } from '../../src/http/objectMembersIssue.js';
import { METADATA_LIMITS } from '../../src/request.js';

const entries = (n: number, value: unknown = 'v') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, value]));

const base = { customerId: 'c', amountMinor: 1, currency: 'NGN' };

describe('objectMembersIssue', () => {
  it('lets a body with metadata at the limit through', () => {
    const text = JSON.stringify({ ...base, metadata: entries(METADATA_LIMITS.maxKeys) });
    expect(objectMembersIssue(text)).toBeNull();
  });

  it('refuses metadata past the limit as validation would, whatever it holds', () => {
    for (const value of ['v', 1, { nested: true }, null]) {
      const text = JSON.stringify({ ...base, metadata: entries(12_000, value) });
      expect(objectMembersIssue(text)).toEqual({
        field: 'metadata',
        message: `must have at most ${METADATA_LIMITS.maxKeys} keys`,
      });
    }
  });

  it('finds metadata by its decoded name, and is not fooled by keys or strings that look alike', () => {
    const escaped = `{"meta\\u0064ata":${JSON.stringify(entries(51))}}`;
    expect(objectMembersIssue(escaped)?.field).toBe('metadata');
    const inString = JSON.stringify({ description: `{${'"a":1,'.repeat(100)}}`, ...base });
    expect(objectMembersIssue(inString)).toBeNull();
    const quotes = JSON.stringify({ description: 'say \\"hi\\" {', metadata: entries(10) });
    expect(objectMembersIssue(quotes)).toBeNull();
  });

  it('refuses a body of thousands of fields, and any other crowded object', () => {
    expect(objectMembersIssue(JSON.stringify({ ...base, ...entries(5_000) }))).toEqual({
      field: 'body',
      message: `has more than ${METADATA_LIMITS.maxKeys} fields`,
    });
    expect(objectMembersIssue(JSON.stringify({ ...base, description: entries(60) }))).toEqual({
      field: 'description',
      message: `has an object of more than ${METADATA_LIMITS.maxKeys} members`,
    });
  });

  it('lets long arrays and deep nesting through: they are for JSON.parse and validation', () => {
    expect(
      objectMembersIssue(JSON.stringify({ a: Array.from({ length: 5_000 }, () => 1) })),
    ).toBeNull();
    expect(
      objectMembersIssue(JSON.stringify({ a: Array.from({ length: 100 }, () => entries(50)) })),
    ).toBeNull();
  });

  it('refuses a field given twice, naming it, whichever value comes last', () => {
    for (const text of [
      '{"amountMinor":100,"currency":"NGN","amountMinor":100000}',
      '{"amountMinor":100000,"amountMinor":100}',
      // The same key, spelt with an escape: JSON.parse reads both as one.
      '{"amountMinor":1,"\\u0061mountMinor":2}',
    ]) {
      expect(objectMembersIssue(text)).toEqual({
        field: 'amountMinor',
        message: 'is given more than once',
      });
    }
  });

  it('refuses a metadata key given twice, and a member twice in any deeper object', () => {
    expect(objectMembersIssue('{"metadata":{"order":"1","note":"x","order":"2"}}')).toEqual({
      field: 'metadata',
      message: 'has the key "order" more than once',
    });
    expect(objectMembersIssue('{"description":[{"a":1,"a":2}]}')).toEqual({
      field: 'description',
      message: 'has an object naming a member more than once',
    });
  });

  it('cuts a long repeated name as validation does, so that the refusal stays small', () => {
    const key = 'k'.repeat(5_000);
    const top = objectMembersIssue(`{"${key}":1,"${key}":2}`);
    expect(top?.field).toBe(`${'k'.repeat(100)}…`);
    const inMetadata = objectMembersIssue(`{"metadata":{"${key}":"1","${key}":"2"}}`);
    expect(inMetadata?.message.length).toBeLessThan(200);
    const crowded = objectMembersIssue(JSON.stringify({ [key]: entries(60) }));
    expect(crowded?.field).toBe(`${'k'.repeat(100)}…`);
  });

  it('lets one name in different objects, and strings that repeat a key, through', () => {
    const text = JSON.stringify({
      amountMinor: 1,
      metadata: { amountMinor: 'amountMinor', note: 'amountMinor' },
      items: [{ a: 1 }, { a: 2 }],
    });
    expect(objectMembersIssue(text)).toBeNull();
  });

  it('never refuses a JSON text whose objects are all within the limit', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        expect(objectMembersIssue(JSON.stringify(value))).toBeNull();
      }),
      { numRuns: 300 },
    );
  });
});
