import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../src/errors.js';
import { readIdempotencyKey } from '../../src/http/readIdempotencyKey.js';

const HEADER = 'Idempotency-Key';

/** The one issue a refused key gets; fails the test if the key is accepted. */
function refusal(values: string[]): { field: string; message: string } {
  try {
    readIdempotencyKey(values, HEADER);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    const issues = (error as InvalidRequestError).issues;
    expect(issues).toHaveLength(1);
    return issues[0] as { field: string; message: string };
  }
  throw new Error(`accepted ${JSON.stringify(values)}`);
}

describe('readIdempotencyKey', () => {
  it.each([
    ['abc', 'abc'],
    ['"abc"', 'abc'],
    ['8e03978e-40d5-43e8-bc93-6894a57f9324', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['"a \\"quoted\\" key"', 'a "quoted" key'],
    ['"back\\\\slash"', 'back\\slash'],
    ['"a, b"', 'a, b'],
    ['back\\slash', 'back\\slash'],
    ['a b', 'a b'],
    ['"abc"   ', 'abc'],
  ])('reads %s as the key %s', (header, key) => {
    expect(readIdempotencyKey([header], HEADER)).toBe(key);
  });

  it.each([
    ['"abc', 'an unterminated string'],
    ['"ab\\c"', 'an escape other than \\" and \\\\'],
    ['"abc\\"', 'an escape that eats the closing quote'],
    ['"abc"x', 'text after the closing quote'],
    ['"abc";p=1', 'parameters'],
    ['ab"c', 'a quote inside a bare key'],
    ['abc"', 'a bare key ending in a quote'],
    ['"caf\u00e9"', 'a character outside printable ASCII'],
  ])('refuses %s (%s) as badly quoted', (header) => {
    const issue = refusal([header]);
    expect(issue.field).toBe(HEADER);
    expect(issue.message).toMatch(/^is badly quoted/);
  });

  it.each([
    [['a', 'b'], 'two header lines (node)'],
    [['a, b'], 'two lines joined (Fetch, proxies)'],
    [['"a", "b"'], 'two quoted keys joined'],
    [['"a","b"'], 'a list without spaces'],
  ])('refuses %j (%s): the key must be sent once', (values) => {
    expect(refusal(values)).toEqual({ field: HEADER, message: 'must be sent once' });
  });

  it('says a missing key is required, and checks the key itself before any body is read', () => {
    expect(refusal([])).toEqual({ field: HEADER, message: 'is required' });
    expect(refusal([''])).toEqual({ field: HEADER, message: 'must not be empty' });
    expect(refusal(['""'])).toEqual({ field: HEADER, message: 'must not be empty' });
    expect(refusal(['k'.repeat(256)])).toEqual({
      field: HEADER,
      message: 'must be at most 255 characters',
    });
    expect(refusal([`"${'k'.repeat(256)}"`])).toEqual({
      field: HEADER,
      message: 'must be at most 255 characters',
    });
    expect(refusal(['cl\u00e9'])).toEqual({ field: HEADER, message: 'must be printable ASCII' });
  });

  it('keeps the longest key, bare or quoted', () => {
    const key = 'k'.repeat(255);
    expect(readIdempotencyKey([key], HEADER)).toBe(key);
    expect(readIdempotencyKey([`"${key}"`], HEADER)).toBe(key);
  });
});
