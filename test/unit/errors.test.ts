import { describe, expect, it } from 'vitest';
import {
  ChargeOnceError,
  ChargeRejectedError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidRequestError,
  ProviderUnavailableError,
  StoreUnavailableError,
} from '../../src/index.js';

describe('error taxonomy', () => {
  it.each([
    [
      new InvalidRequestError([{ field: 'amountMinor', message: 'must be positive' }]),
      'invalid_request',
      400,
    ],
    [new IdempotencyKeyReusedError(), 'idempotency_key_reused', 422],
    [new IdempotencyKeyInUseError(500), 'idempotency_key_in_use', 409],
    [new ProviderUnavailableError(1000), 'provider_unavailable', 503],
    [new StoreUnavailableError(), 'store_unavailable', 503],
    [new ChargeRejectedError(409, '{}'), 'charge_rejected', 409],
  ])('%s has a stable code and status', (error, code, status) => {
    expect(error).toBeInstanceOf(ChargeOnceError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.httpStatus).toBe(status);
    expect(error.name).toBe(error.constructor.name);
  });

  it('refuses a rejection status that could not be replayed', () => {
    expect(() => new ChargeRejectedError(42, '{}')).toThrow(RangeError);
    expect(() => new ChargeRejectedError(409.5, '{}')).toThrow(RangeError);
    expect(() => new ChargeRejectedError(600, '{}')).toThrow(RangeError);
    expect(() => new ChargeRejectedError(409, {} as unknown as string)).toThrow(RangeError);
    expect(new ChargeRejectedError(409, '{}').status).toBe(409);
  });

  it('keeps the cause', () => {
    const cause = new Error('socket hang up');
    expect(new StoreUnavailableError({ cause }).cause).toBe(cause);
  });
});
