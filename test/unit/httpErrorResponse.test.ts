import { describe, expect, it } from 'vitest';
import {
  ChargeNeedsAttentionError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  InvalidRequestError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SchemaNotMigratedError,
  SchemaVersionError,
  SimulatedCrashError,
  StoreUnavailableError,
} from '../../src/index.js';
import { errorResponse } from '../../src/http/errorResponse.js';

const parse = (body: string) => (JSON.parse(body) as { error: Record<string, unknown> }).error;

const CHARGE_ID = '0b7e6f1c-2f4d-4c55-9a43-6f0a1d2b3c4d';

describe('errorResponse', () => {
  it.each([
    [new IdempotencyKeyReusedError(), 422, 'idempotency_key_reused', undefined],
    [new IdempotencyKeyInUseError(50), 409, 'idempotency_key_in_use', '1'],
    [new IdempotencyKeyInUseError(1_001), 409, 'idempotency_key_in_use', '2'],
    [new ProviderUnavailableError(2_500), 503, 'provider_unavailable', '3'],
    [new StoreUnavailableError(), 503, 'store_unavailable', '1'],
    [new ProviderError(), 502, 'provider_error', undefined],
    [new ChargeNeedsAttentionError(), 500, 'charge_needs_attention', undefined],
    [new IdempotencyKeyExpiredError(CHARGE_ID), 410, 'idempotency_key_expired', undefined],
  ])('maps %s by its status and code', (error, status, code, retryAfter) => {
    const answer = errorResponse(error, 'Idempotency-Key');
    expect(answer.status).toBe(status);
    expect(answer.headers['Retry-After']).toBe(retryAfter);
    expect(parse(answer.body)).toEqual({ code, message: error.message });
  });

  it('renames the engine fields to what the client sent', () => {
    const error = new InvalidRequestError([
      { field: 'idempotencyKey', message: 'must not be empty' },
      { field: 'request', message: "Unrecognized key(s) in object: 'extra'" },
      { field: 'amountMinor', message: 'must be positive' },
    ]);

    const answer = errorResponse(error, 'X-Key');

    expect(answer.status).toBe(400);
    expect(parse(answer.body)).toEqual({
      code: 'invalid_request',
      message:
        "Invalid request: X-Key: must not be empty; body: Unrecognized key(s) in object: 'extra'; amountMinor: must be positive",
      fields: [
        { field: 'X-Key', message: 'must not be empty' },
        { field: 'body', message: "Unrecognized key(s) in object: 'extra'" },
        { field: 'amountMinor', message: 'must be positive' },
      ],
    });
  });

  it.each([
    new Error('connect ECONNREFUSED 10.0.0.7:5432'),
    new SchemaVersionError('database schema 9 is newer than 3'),
    new InvalidConfigurationError('leaseMs must be positive'),
    new SimulatedCrashError('afterReserveCommit'),
    new SchemaNotMigratedError('chargeonce'),
    'a string',
  ])('shows nothing of an unexpected or operator error: %s', (error) => {
    const answer = errorResponse(error, 'Idempotency-Key');
    expect(answer).toEqual({
      status: 500,
      headers: {},
      body: '{"error":{"code":"internal_error","message":"Internal server error."}}',
    });
  });

  it("answers a refused provider answer with 502 and its code, not the operator's detail", () => {
    const error = new ProviderAnswerInvalidError(
      'provider charge ch_9 is for 3000 NGN, the request for 2000 NGN',
    );

    const answer = errorResponse(error, 'Idempotency-Key');

    expect(answer.status).toBe(502);
    expect(answer.headers['Retry-After']).toBeUndefined();
    const sent = parse(answer.body);
    expect(sent.code).toBe('provider_answer_invalid');
    expect(sent.message).toEqual(expect.any(String));
    expect(answer.body).not.toContain('ch_9');
  });
});
