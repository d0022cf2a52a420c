import { describe, expect, it } from 'vitest';
import { InvalidRequestError, type FieldIssue } from '../../src/errors.js';
import type { ChargeBody } from '../../src/http/EdgeRequest.js';
import { parseCaptureBody, parseRefundBody } from '../../src/http/parseMovementBody.js';

const ID = '3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a0b1c';
const scope = { key: 'k-1', merchantId: 'm_1', chargeId: ID };

const bytes = (text: string): ChargeBody => ({
  kind: 'bytes',
  bytes: new TextEncoder().encode(text),
});
const parsed = (value: unknown): ChargeBody => ({ kind: 'parsed', value });

function issuesOf(parse: () => unknown): FieldIssue[] {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return [...(error as InvalidRequestError).issues];
  }
  throw new Error('expected a refusal');
}

describe('parseRefundBody', () => {
  it('makes the request from the merchant, the path and the body', () => {
    expect(parseRefundBody(bytes('{"amountMinor":500,"reason":"duplicate"}'), scope)).toEqual({
      merchantId: 'm_1',
      chargeId: ID,
      amountMinor: 500,
      reason: 'duplicate',
    });
    expect(parseRefundBody(parsed({ amountMinor: 1 }), scope)).toEqual({
      merchantId: 'm_1',
      chargeId: ID,
      amountMinor: 1,
    });
  });

  it.each([
    [{}, [{ field: 'amountMinor', message: 'is required' }]],
    [{ amountMinor: '5' }, [{ field: 'amountMinor', message: 'must be a number' }]],
    [{ amountMinor: 0 }, [{ field: 'amountMinor', message: 'must be positive' }]],
    [{ amountMinor: -3 }, [{ field: 'amountMinor', message: 'must be positive' }]],
    [{ amountMinor: 1.5 }, [{ field: 'amountMinor', message: 'must be an integer' }]],
    [{ amountMinor: 2 ** 53 }, [{ field: 'amountMinor', message: 'must be a safe integer' }]],
    [
      { amountMinor: 1, reason: 'x'.repeat(201) },
      [{ field: 'reason', message: 'must be at most 200 characters' }],
    ],
    [{ amountMinor: 1, reason: 7 }, [{ field: 'reason', message: 'must be a string' }]],
    [{ amountMinor: 1, amount: 1 }, [{ field: 'amount', message: 'is not a known field' }]],
  ])('refuses %j, naming the field', (body, issues) => {
    expect(issuesOf(() => parseRefundBody(parsed(body), scope))).toEqual(issues);
  });

  it('refuses a merchant or a charge in the body, with every other issue', () => {
    expect(
      issuesOf(() =>
        parseRefundBody(parsed({ merchantId: 'm_1', chargeId: ID, amountMinor: 0 }), scope),
      ),
    ).toEqual([
      { field: 'merchantId', message: 'must not be sent: the merchant is the one authenticated' },
      { field: 'chargeId', message: 'must not be sent: the charge is the one in the path' },
      { field: 'amountMinor', message: 'must be positive' },
    ]);
  });

  it('names a path id that is no chargeonce charge id', () => {
    expect(
      issuesOf(() => parseRefundBody(parsed({ amountMinor: 1 }), { ...scope, chargeId: 'ch_1' })),
    ).toEqual([{ field: 'chargeId', message: expect.stringMatching(/charge id/) as string }]);
  });

  it('keeps a `__proto__` field a field, refused as unknown', () => {
    expect(
      issuesOf(() => parseRefundBody(bytes('{"amountMinor":1,"__proto__":{}}'), scope)),
    ).toEqual([{ field: '__proto__', message: 'is not a known field' }]);
  });

  it.each([
    ['', 'is required'],
    ['[1]', 'must be a JSON object'],
    ['{"amountMinor":', 'must be valid JSON'],
  ])('refuses the body %j as for a charge', (text, message) => {
    expect(issuesOf(() => parseRefundBody(bytes(text), scope))).toEqual([
      { field: 'body', message },
    ]);
  });
});

describe('parseCaptureBody', () => {
  it('takes no body, or {}, as a capture of everything', () => {
    const all = { merchantId: 'm_1', chargeId: ID };
    expect(parseCaptureBody(bytes(''), scope)).toEqual(all);
    expect(parseCaptureBody(bytes('{}'), scope)).toEqual(all);
    expect(parseCaptureBody(parsed({}), scope)).toEqual(all);
    expect(parseCaptureBody(parsed({ amountMinor: 700 }), scope)).toEqual({
      ...all,
      amountMinor: 700,
    });
  });

  it('refuses what a refund would, and a reason', () => {
    expect(
      issuesOf(() => parseCaptureBody(parsed({ amountMinor: 0, reason: 'r' }), scope)),
    ).toEqual([
      { field: 'amountMinor', message: 'must be positive' },
      { field: 'reason', message: 'is not a known field' },
    ]);
    expect(issuesOf(() => parseCaptureBody(bytes('null'), scope))).toEqual([
      { field: 'body', message: 'must be a JSON object' },
    ]);
  });
});
