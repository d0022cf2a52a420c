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
import { errorResponse, type ErrorStyle } from '../../src/http/errorResponse.js';
import { HttpEdgeError } from '../../src/http/HttpEdgeError.js';
import { MAX_REPORTED_ISSUES } from '../../src/request.js';

const parse = (body: string) => (JSON.parse(body) as { error: Record<string, unknown> }).error;

const JSON_STYLE: ErrorStyle = { format: 'json', problemTypeBase: undefined };
const PROBLEM: ErrorStyle = { format: 'problem', problemTypeBase: undefined };

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
    const answer = errorResponse(error, JSON_STYLE);
    expect(answer.status).toBe(status);
    expect(answer.headers['Retry-After']).toBe(retryAfter);
    expect(answer.headers['Content-Type']).toBe('application/json');
    expect(parse(answer.body)).toEqual({ code, message: error.message });
  });

  it('names each invalid field once: in fields, never again in the message', () => {
    const error = new InvalidRequestError([
      { field: 'Idempotency-Key', message: 'must not be empty' },
      { field: 'amountMinor', message: 'must be positive' },
    ]);

    const answer = errorResponse(error, JSON_STYLE);

    expect(answer.status).toBe(400);
    const sent = parse(answer.body);
    expect(sent).toEqual({
      code: 'invalid_request',
      message: expect.any(String) as string,
      fields: [
        { field: 'Idempotency-Key', message: 'must not be empty' },
        { field: 'amountMinor', message: 'must be positive' },
      ],
    });
    expect(sent.message).not.toContain('must not be empty');
    expect(sent.message).not.toContain('must be positive');
  });

  it(`reports at most ${MAX_REPORTED_ISSUES} fields, however many issues an error carries`, () => {
    const issues = Array.from({ length: 5_000 }, (_, i) => ({
      field: `f${i}`,
      message: 'is not a known field',
    }));

    const answer = errorResponse(new InvalidRequestError(issues), JSON_STYLE);

    const fields = parse(answer.body).fields as unknown[];
    expect(fields).toHaveLength(MAX_REPORTED_ISSUES);
    expect(answer.body.length).toBeLessThan(2_000);
  });

  it('names the fields of a 422 that differ from the stored request, by name only', () => {
    const error = new IdempotencyKeyReusedError({
      differingFields: ['amountMinor', 'metadata.order'],
    });

    const json = parse(errorResponse(error, JSON_STYLE).body);
    const problem = JSON.parse(errorResponse(error, PROBLEM).body) as Record<string, unknown>;

    const fields = [
      { field: 'amountMinor', message: 'differs from the request first sent with this key' },
      { field: 'metadata.order', message: 'differs from the request first sent with this key' },
    ];
    expect(json).toEqual({
      code: 'idempotency_key_reused',
      message: 'This idempotency key was already used with a different request.',
      fields,
    });
    expect(problem).toMatchObject({ status: 422, code: 'idempotency_key_reused', fields });
  });

  it('writes RFC 9457 problem details: about:blank with the status phrase by default', () => {
    const answer = errorResponse(new IdempotencyKeyInUseError(1_500), PROBLEM);

    expect(answer.status).toBe(409);
    expect(answer.headers).toEqual({
      'Content-Type': 'application/problem+json',
      'Retry-After': '2',
    });
    expect(JSON.parse(answer.body)).toEqual({
      type: 'about:blank',
      title: 'Conflict',
      status: 409,
      detail: 'A request with this idempotency key is in progress.',
      code: 'idempotency_key_in_use',
    });
  });

  it('gives each code a problem type of its own under problemTypeBase', () => {
    const style: ErrorStyle = {
      format: 'problem',
      problemTypeBase: 'https://docs.example.com/errors/',
    };
    const error = new InvalidRequestError([{ field: 'currency', message: 'is required' }]);

    const problem = JSON.parse(errorResponse(error, style).body) as Record<string, unknown>;

    expect(problem).toEqual({
      type: 'https://docs.example.com/errors/invalid_request',
      title: 'Invalid request',
      status: 400,
      detail: expect.any(String) as string,
      code: 'invalid_request',
      fields: [{ field: 'currency', message: 'is required' }],
    });
  });

  it("keeps an edge refusal's own headers in both formats", () => {
    const error = new HttpEdgeError('method_not_allowed', 405, 'Use POST.', { Allow: 'POST' });
    for (const style of [JSON_STYLE, PROBLEM]) {
      expect(errorResponse(error, style).headers['Allow']).toBe('POST');
    }
  });

  it.each([
    new Error('connect ECONNREFUSED 10.0.0.7:5432'),
    new SchemaVersionError('database schema 9 is newer than 3'),
    new InvalidConfigurationError('leaseMs must be positive'),
    new SimulatedCrashError('afterReserveCommit'),
    new SchemaNotMigratedError('chargeonce'),
    'a string',
  ])('shows nothing of an unexpected or operator error: %s', (error) => {
    expect(errorResponse(error, JSON_STYLE)).toEqual({
      status: 500,
      headers: { 'Content-Type': 'application/json' },
      body: '{"error":{"code":"internal_error","message":"Internal server error."}}',
    });
    expect(JSON.parse(errorResponse(error, PROBLEM).body)).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'Internal server error.',
      code: 'internal_error',
    });
  });

  it("answers a refused provider answer with 502 and its code, not the operator's detail", () => {
    const error = new ProviderAnswerInvalidError(
      'provider charge ch_9 is for 3000 NGN, the request for 2000 NGN',
    );

    const answer = errorResponse(error, JSON_STYLE);

    expect(answer.status).toBe(502);
    expect(answer.headers['Retry-After']).toBeUndefined();
    const sent = parse(answer.body);
    expect(sent.code).toBe('provider_answer_invalid');
    expect(sent.message).toEqual(expect.any(String));
    expect(answer.body).not.toContain('ch_9');
  });
});
