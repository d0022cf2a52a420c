import { describe, expect, it } from 'vitest';
import { negotiateErrorFormat } from '../../src/http/negotiateErrorFormat.js';

describe('negotiateErrorFormat', () => {
  it.each([
    ['application/problem+json', 'problem'],
    ['application/problem+json, application/json', 'problem'],
    ['application/json, application/problem+json', 'problem'],
    ['APPLICATION/PROBLEM+JSON', 'problem'],
    ['application/json;q=0.5, application/problem+json', 'problem'],
    ['application/problem+json;q=0.9, */*;q=0.1', 'problem'],
    ['application/problem+json; charset=utf-8', 'problem'],
  ])('asks for problem details: %s', (accept, format) => {
    expect(negotiateErrorFormat(accept)).toBe(format);
  });

  it.each([
    ['', 'json'],
    ['*/*', 'json'],
    ['application/*', 'json'],
    ['application/json', 'json'],
    ['application/problem+json;q=0.5, application/json', 'json'],
    ['application/problem+json;q=0', 'json'],
    ['application/problem+json;q=abc', 'json'],
    ['text/html', 'json'],
  ])('keeps {"error":…} bodies: %s', (accept, format) => {
    expect(negotiateErrorFormat(accept)).toBe(format);
  });
});
