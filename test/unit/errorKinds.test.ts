import { inspect } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import {
  ChargeOnceError,
  IdempotencyKeyReusedError,
  InvalidRequestError,
  ProviderTransientError,
} from '../../src/index.js';
import { KeyNotResolvableError } from '../../src/admin/KeyNotResolvableError.js';
import { HttpEdgeError } from '../../src/http/HttpEdgeError.js';
import { StripeAdapterError } from '../../src/stripe/mapStripeError.js';

/**
 * Another copy of chargeonce's classes in this process, as the CommonJS build is beside the ES
 * module one when an app loads both: the same modules evaluated again.
 */
async function anotherCopy() {
  vi.resetModules();
  const index = await import('../../src/index.js');
  const admin = await import('../../src/admin/KeyNotResolvableError.js');
  const http = await import('../../src/http/HttpEdgeError.js');
  const stripe = await import('../../src/stripe/mapStripeError.js');
  return { ...index, ...admin, ...http, ...stripe };
}

describe('instanceof across copies of chargeonce', () => {
  it('an error of another copy is an instance of this copy’s class of the same kind, and its parents’', async () => {
    const other = await anotherCopy();
    expect(other.IdempotencyKeyReusedError).not.toBe(IdempotencyKeyReusedError);

    const reused = new other.IdempotencyKeyReusedError({ differingFields: ['amountMinor'] });
    expect(reused instanceof IdempotencyKeyReusedError).toBe(true);
    expect(reused instanceof ChargeOnceError).toBe(true);
    expect(reused instanceof InvalidRequestError).toBe(false);

    const invalid = new other.InvalidRequestError([{ field: 'amountMinor', message: 'x' }]);
    expect(invalid instanceof InvalidRequestError).toBe(true);
    expect(invalid instanceof IdempotencyKeyReusedError).toBe(false);

    expect(
      new other.KeyNotResolvableError('not_parked', 'completed') instanceof KeyNotResolvableError,
    ).toBe(true);
    expect(new other.HttpEdgeError('not_found', 404, 'no') instanceof HttpEdgeError).toBe(true);
    expect(new other.HttpEdgeError('not_found', 404, 'no') instanceof KeyNotResolvableError).toBe(
      false,
    );

    expect(
      new other.StripeAdapterError('lookup_incomplete', 'x') instanceof StripeAdapterError,
    ).toBe(true);
    const transient = new other.ProviderTransientError('timeout');
    expect(transient instanceof ProviderTransientError).toBe(true);
    expect(transient instanceof ChargeOnceError).toBe(false);
  });

  it('a class of yours matches its own instances only; plain errors match nothing', async () => {
    class PaymentsTeamError extends ChargeOnceError {}
    const other = await anotherCopy();
    expect(new PaymentsTeamError('provider_error', 502, 'x') instanceof PaymentsTeamError).toBe(
      true,
    );
    expect(new PaymentsTeamError('provider_error', 502, 'x') instanceof ChargeOnceError).toBe(true);
    expect(new other.ChargeOnceError('provider_error', 502, 'x') instanceof PaymentsTeamError).toBe(
      false,
    );
    expect(new Error('x') instanceof ChargeOnceError).toBe(false);
    expect((null as unknown) instanceof ChargeOnceError).toBe(false);
    expect(({ code: 'invalid_request' } as unknown) instanceof InvalidRequestError).toBe(false);
  });

  it('what an error records for it is out of sight: not enumerable, not in its inspection', () => {
    const error = new InvalidRequestError([{ field: 'currency', message: 'x' }]);
    const symbols = Object.getOwnPropertySymbols(error);
    expect(symbols.length).toBeGreaterThan(0);
    for (const symbol of symbols) {
      expect(Object.getOwnPropertyDescriptor(error, symbol)?.enumerable).toBe(false);
    }
    expect(inspect(error)).not.toContain('chargeonce.errorKinds');
  });
});
