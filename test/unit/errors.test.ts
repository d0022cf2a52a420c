import { describe, expect, expectTypeOf, it } from 'vitest';
import * as chargeonce from '../../src/index.js';
import {
  CHARGE_ONCE_ERROR_CODES,
  ChargeNeedsAttentionError,
  ChargeOnceError,
  ChargeRejectedError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  InvalidRequestError,
  KeyNotResolvableError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SchemaNotMigratedError,
  SchemaVersionError,
  SimulatedCrashError,
  StoreUnavailableError,
  type ChargeOnceErrorCode,
} from '../../src/index.js';
import { ChargeClientError, type ChargeClientErrorCode } from '../../src/client/index.js';
import { HttpEdgeError, type HttpEdgeErrorCode } from '../../src/http/HttpEdgeError.js';

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
    expect(() => new ChargeRejectedError(42, '{}')).toThrow(InvalidConfigurationError);
    expect(() => new ChargeRejectedError(409.5, '{}')).toThrow(InvalidConfigurationError);
    expect(() => new ChargeRejectedError(600, '{}')).toThrow(InvalidConfigurationError);
    expect(() => new ChargeRejectedError(409, {} as unknown as string)).toThrow(
      InvalidConfigurationError,
    );
    expect(new ChargeRejectedError(409, '{}').status).toBe(409);
  });

  it('keeps the cause', () => {
    const cause = new Error('socket hang up');
    expect(new StoreUnavailableError({ cause }).cause).toBe(cause);
  });
});

/**
 * One error of every code. `satisfies` makes it complete both ways: a code added to the list
 * without an error here, or an error here whose code is not in the list, does not compile.
 */
const ONE_OF_EACH = {
  invalid_request: () => new InvalidRequestError([{ field: 'amountMinor', message: 'too small' }]),
  idempotency_key_reused: () => new IdempotencyKeyReusedError(),
  idempotency_key_in_use: () => new IdempotencyKeyInUseError(100),
  provider_unavailable: () => new ProviderUnavailableError(1_000),
  provider_error: () => new ProviderError(),
  charge_needs_attention: () => new ChargeNeedsAttentionError(),
  store_unavailable: () => new StoreUnavailableError(),
  schema_not_migrated: () => new SchemaNotMigratedError('chargeonce'),
  schema_version: () => new SchemaVersionError('migrated by a newer chargeonce'),
  invalid_configuration: () => new InvalidConfigurationError('leaseMs must be positive'),
  charge_rejected: () => new ChargeRejectedError(409, '{}'),
  simulated_crash: () => new SimulatedCrashError('afterClaimCommit'),
  method_not_allowed: () => new HttpEdgeError('method_not_allowed', 405, 'Use POST.'),
  unauthenticated: () => new HttpEdgeError('unauthenticated', 401, 'Authentication is required.'),
  unsupported_media_type: () => new HttpEdgeError('unsupported_media_type', 415, 'JSON only.'),
  payload_too_large: () => new HttpEdgeError('payload_too_large', 413, 'Too large.'),
  not_found: () => new HttpEdgeError('not_found', 404, 'No such route.'),
  not_implemented: () => new HttpEdgeError('not_implemented', 501, 'Refunds are not served here.'),
  charge_refused: () =>
    new ChargeClientError('charge_refused', { key: 'k', attempts: 1, response: undefined }),
  charge_retries_exhausted: () =>
    new ChargeClientError('charge_retries_exhausted', {
      key: 'k',
      attempts: 4,
      response: undefined,
    }),
  charge_aborted: () =>
    new ChargeClientError('charge_aborted', { key: 'k', attempts: 1, response: undefined }),
  idempotency_key_expired: () =>
    new IdempotencyKeyExpiredError('9b2f6c1e-0000-4000-8000-000000000000'),
  provider_answer_invalid: () => new ProviderAnswerInvalidError('another amount'),
  key_not_resolvable: () => new KeyNotResolvableError('completed', 'completed'),
} satisfies Record<ChargeOnceErrorCode, () => ChargeOnceError>;

/**
 * The status each code is answered with (null: it varies). Without a `case` for every code the
 * function would fall off its end, which does not compile: the switch is exhaustive.
 */
function statusOf(code: ChargeOnceErrorCode): number | null {
  switch (code) {
    case 'invalid_request':
      return 400;
    case 'unauthenticated':
      return 401;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'idempotency_key_in_use':
    case 'key_not_resolvable':
      return 409;
    case 'idempotency_key_expired':
      return 410;
    case 'payload_too_large':
      return 413;
    case 'unsupported_media_type':
      return 415;
    case 'idempotency_key_reused':
      return 422;
    case 'charge_needs_attention':
    case 'schema_not_migrated':
    case 'schema_version':
    case 'invalid_configuration':
    case 'simulated_crash':
      return 500;
    case 'provider_error':
    case 'provider_answer_invalid':
      return 502;
    case 'not_implemented':
      return 501;
    case 'provider_unavailable':
    case 'store_unavailable':
      return 503;
    case 'charge_rejected':
    case 'charge_refused':
    case 'charge_retries_exhausted':
    case 'charge_aborted':
      return null;
  }
}

describe('error codes', () => {
  it('are one union, shared by every error class', () => {
    expectTypeOf<ChargeOnceError['code']>().toEqualTypeOf<ChargeOnceErrorCode>();
    expectTypeOf<(typeof CHARGE_ONCE_ERROR_CODES)[number]>().toEqualTypeOf<ChargeOnceErrorCode>();
    expectTypeOf<HttpEdgeErrorCode>().toExtend<ChargeOnceErrorCode>();
    expectTypeOf<ChargeClientErrorCode>().toExtend<ChargeOnceErrorCode>();
    expect(new Set(CHARGE_ONCE_ERROR_CODES).size).toBe(CHARGE_ONCE_ERROR_CODES.length);
  });

  it.each(CHARGE_ONCE_ERROR_CODES)('%s: an error carries it, with its status', (code) => {
    const error = ONE_OF_EACH[code]();
    expect(error).toBeInstanceOf(ChargeOnceError);
    expect(error.code).toBe(code);
    const status = statusOf(code);
    if (status !== null) expect(error.httpStatus).toBe(status);
  });

  it('every exported error class has its code in the list', () => {
    const exported = Object.values(chargeonce).filter(
      (value): value is typeof ChargeOnceError =>
        typeof value === 'function' && value.prototype instanceof ChargeOnceError,
    );
    const covered = new Set(Object.values(ONE_OF_EACH).map((make) => make().constructor));

    expect(exported.length).toBeGreaterThan(10);
    for (const errorClass of exported) expect(covered).toContain(errorClass);
    for (const make of Object.values(ONE_OF_EACH)) {
      expect(CHARGE_ONCE_ERROR_CODES).toContain(make().code);
    }
  });

  it('InvalidConfigurationError and SchemaNotMigratedError keep their cause', () => {
    const cause = new TypeError('Invalid URL');
    expect(new InvalidConfigurationError('bad pool', { cause }).cause).toBe(cause);
    const missing = new SchemaNotMigratedError('payments', { cause });
    expect(missing.cause).toBe(cause);
    expect(missing.message).toContain("migrate(pool, { schema: 'payments' })");
  });
});
