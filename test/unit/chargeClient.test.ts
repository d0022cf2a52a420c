import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ChargeClientError,
  createChargeClient,
  type ChargeClientOptions,
} from '../../src/client/index.js';
import { InvalidConfigurationError, InvalidRequestError } from '../../src/index.js';
import { backoffDelay, parseRetryAfter } from '../../src/client/retryPolicy.js';
import { errorResponse } from '../../src/http/errorResponse.js';
import { IdempotencyKeyExpiredError, ProviderAnswerInvalidError } from '../../src/errors.js';

const request = { customerId: 'c_42', amountMinor: 2000, currency: 'NGN' };

type Step =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { fail: 'network' | 'timeout' };

/**
 * A scripted server and a clock that never waits: `sleep` moves `now` forward by what was asked
 * and records it, so backoff is checked exactly and nothing sleeps for real.
 */
function harness(steps: Step[], options: Partial<ChargeClientOptions> = {}) {
  const sent: { url: string; key: string | null; body: string; auth: string | null }[] = [];
  const slept: number[] = [];
  let now = 1_700_000_000_000;
  const fetch: typeof globalThis.fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    sent.push({
      url: input instanceof Request ? input.url : input.toString(),
      key: headers.get('idempotency-key'),
      body: typeof init?.body === 'string' ? init.body : '',
      auth: headers.get('authorization'),
    });
    const step = steps.shift();
    if (!step) return Promise.reject(new Error('the script ran out'));
    if ('fail' in step) {
      return Promise.reject(
        step.fail === 'network'
          ? new TypeError('fetch failed', {
              cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
            })
          : new DOMException('The operation timed out.', 'TimeoutError'),
      );
    }
    return Promise.resolve(
      new Response(step.body ?? '{"id":"ch_1"}', {
        status: step.status,
        headers: { 'content-type': 'application/json', ...step.headers },
      }),
    );
  };
  const client = createChargeClient({
    baseUrl: 'http://127.0.0.1:1/api/',
    fetch,
    random: () => 0.5,
    now: () => now,
    sleep: (ms) => {
      slept.push(ms);
      now += ms;
      return Promise.resolve();
    },
    ...options,
  });
  return { client, sent, slept, steps, advance: (ms: number) => (now += ms) };
}

async function failure(promise: Promise<unknown>): Promise<ChargeClientError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the charge to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ChargeClientError);
  return error as ChargeClientError;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('chargeClient: one key per operation', () => {
  it('sends the same random UUID v4 key and the same bytes on every attempt', async () => {
    const { client, sent } = harness([
      { fail: 'network' },
      { status: 503 },
      { status: 201, body: '{"id":"ch_9"}' },
    ]);

    const result = await client.charge(request);

    expect(result).toMatchObject({
      status: 201,
      body: '{"id":"ch_9"}',
      attempts: 3,
      replayed: false,
    });
    expect(result.key).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(sent.map((s) => s.key)).toEqual([result.key, result.key, result.key]);
    expect(new Set(sent.map((s) => s.body)).size).toBe(1);
    expect(JSON.parse(sent[0]?.body ?? '')).toEqual(request);
    expect(sent[0]?.url).toBe('http://127.0.0.1:1/api/charges');
  });

  it('uses a new key for each operation, or the one given', async () => {
    const { client, sent } = harness([{ status: 201 }, { status: 201 }, { status: 201 }]);

    const a = await client.charge(request);
    const b = await client.charge(request);
    const c = await client.charge(request, { key: 'order-4821' });

    expect(a.key).not.toBe(b.key);
    expect(c.key).toBe('order-4821');
    expect(sent.map((s) => s.key)).toEqual([a.key, b.key, 'order-4821']);
  });

  it('refuses an invalid key before sending anything', async () => {
    const { client, sent } = harness([]);
    await expect(client.charge(request, { key: '' })).rejects.toBeInstanceOf(InvalidRequestError);
    await expect(client.charge(request, { key: 'k'.repeat(256) })).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    await expect(client.charge(request, { key: 'clé' })).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    expect(sent).toHaveLength(0);
  });

  it('calls a headers function before each attempt', async () => {
    let token = 0;
    const { client, sent } = harness([{ status: 503 }, { status: 201 }], {
      headers: () => ({ authorization: `Bearer t${++token}` }),
    });

    await client.charge(request);

    expect(sent.map((s) => s.auth)).toEqual(['Bearer t1', 'Bearer t2']);
  });

  it('rejects at once with the error of a headers function that throws', async () => {
    const broken = new Error('no token');
    const { client, sent } = harness([{ status: 201 }], {
      headers: () => {
        throw broken;
      },
    });

    await expect(client.charge(request)).rejects.toBe(broken);
    expect(sent).toHaveLength(0);
  });
});

describe('chargeClient: what is retried', () => {
  it.each([408, 409, 429, 502, 503, 504])('retries %i', async (status) => {
    const { client, sent } = harness([{ status }, { status: 201 }]);
    const result = await client.charge(request);
    expect(result.status).toBe(201);
    expect(sent).toHaveLength(2);
  });

  it.each(['network', 'timeout'] as const)('retries a %s failure', async (fail) => {
    const { client, sent } = harness([{ fail }, { status: 201 }]);
    expect((await client.charge(request)).attempts).toBe(2);
    expect(sent).toHaveLength(2);
  });

  it('abandons an attempt that outlasts attemptTimeoutMs and retries it (fake timers)', async () => {
    vi.useFakeTimers();
    let calls = 0;
    const hangsOnce: typeof globalThis.fetch = (_input, init) => {
      calls += 1;
      if (calls > 1) return Promise.resolve(new Response('{"id":"ch_2"}', { status: 201 }));
      // Never answers; only the attempt's own signal ends it.
      return new Promise((_, reject) => {
        const signal = init?.signal;
        signal?.addEventListener('abort', () => reject(signal.reason as Error));
      });
    };
    const client = createChargeClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch: hangsOnce,
      attemptTimeoutMs: 5_000,
      sleep: async () => {},
    });

    const pending = client.charge(request);
    await vi.advanceTimersByTimeAsync(5_000);
    const result = await pending;

    expect(result).toMatchObject({ status: 201, attempts: 2 });
    expect(calls).toBe(2);
  });

  it('resolves with a decline (402) at once: it is the answer', async () => {
    const { client, sent } = harness([{ status: 402, body: '{"status":"declined"}' }]);
    const result = await client.charge(request);
    expect(result).toMatchObject({ status: 402, body: '{"status":"declined"}', attempts: 1 });
    expect(sent).toHaveLength(1);
  });

  it('reports a replay', async () => {
    const { client } = harness([{ status: 201, headers: { 'idempotent-replayed': 'true' } }]);
    expect((await client.charge(request)).replayed).toBe(true);
  });

  it.each([400, 401, 403, 404, 410, 422, 500, 301])(
    'never retries %i, and gives up with the response and the key',
    async (status) => {
      const body = `{"error":{"code":"e${status}"}}`;
      const { client, sent, slept } = harness([
        { status, body, headers: { location: '/x' } },
        { status: 201 },
      ]);

      const error = await failure(client.charge(request, { key: 'order-1' }));

      expect(error.code).toBe('charge_refused');
      expect(error.key).toBe('order-1');
      expect(error.attempts).toBe(1);
      expect(error.httpStatus).toBe(status);
      expect(error.response?.status).toBe(status);
      expect(error.response?.body).toBe(body);
      expect(sent).toHaveLength(1);
      expect(slept).toEqual([]);
    },
  );

  it.each([
    new ProviderAnswerInvalidError('provider charge ch_9 is for another amount'),
    new IdempotencyKeyExpiredError('0b7e6f1c-2f4d-4c55-9a43-6f0a1d2b3c4d'),
  ])('never retries what the handler answers to %s: a retry gets the same', async (error) => {
    const answer = errorResponse(error);
    const { client, sent, slept } = harness([
      { status: answer.status, body: answer.body, headers: answer.headers },
      { status: 201 },
    ]);

    const refused = await failure(client.charge(request));

    expect(refused.code).toBe('charge_refused');
    expect(refused.httpStatus).toBe(error.httpStatus);
    expect(refused.response?.body).toBe(answer.body);
    expect(sent).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it('reads the code of problem details too: a 502 provider_answer_invalid is not retried', async () => {
    const answer = errorResponse(new ProviderAnswerInvalidError('another amount'), {
      format: 'problem',
      problemTypeBase: undefined,
    });
    expect(answer.headers['Content-Type']).toBe('application/problem+json');
    const { client, sent } = harness([
      { status: answer.status, body: answer.body, headers: answer.headers },
      { status: 201 },
    ]);

    const refused = await failure(client.charge(request));

    expect(refused.httpStatus).toBe(502);
    expect(sent).toHaveLength(1);
  });

  it('still retries a 502 whose body is not a chargeonce error code it cannot change', async () => {
    const { client, sent } = harness([
      { status: 502, body: '{"error":{"code":"provider_error"}}' },
      { status: 502, body: '<html>Bad Gateway</html>' },
      { status: 201 },
    ]);
    expect((await client.charge(request)).attempts).toBe(3);
    expect(sent).toHaveLength(3);
  });

  it('never retries a replayed outcome, whatever its status', async () => {
    const { client, sent } = harness([
      {
        status: 409,
        body: '{"reason":"out_of_stock"}',
        headers: { 'idempotent-replayed': 'true' },
      },
    ]);
    const error = await failure(client.charge(request));
    expect(error.code).toBe('charge_refused');
    expect(error.response?.body).toBe('{"reason":"out_of_stock"}');
    expect(sent).toHaveLength(1);
  });
});

describe('chargeClient: backoff and Retry-After', () => {
  it('backs off exponentially with full jitter', async () => {
    const draws = [0.5, 0.25, 0.999, 0, 0.5];
    const { client, slept } = harness(
      [
        { status: 503 },
        { status: 503 },
        { status: 503 },
        { status: 503 },
        { status: 503 },
        { status: 201 },
      ],
      { random: () => draws.shift() ?? 0, baseDelayMs: 100, maxDelayMs: 500 },
    );

    await client.charge(request);

    // caps 100, 200, 400, 500 (max), 500; each delay a uniform draw below its cap.
    expect(slept).toEqual([50, 50, 399, 0, 250]);
  });

  it('waits at least what Retry-After asks, in seconds or as a date', async () => {
    const { client, slept, advance } = harness(
      [
        { status: 409, headers: { 'retry-after': '2' } },
        {
          status: 503,
          headers: { 'retry-after': new Date(1_700_000_000_000 + 2_000 + 7_000).toUTCString() },
        },
        { status: 429, headers: { 'retry-after': '0' } },
        { status: 201 },
      ],
      { random: () => 0.5, baseDelayMs: 100 },
    );
    advance(0);

    await client.charge(request);

    // 2 s asked; then a date 7 s past the clock (which the first wait moved on by 2 s); then
    // 0 s asked, so the backoff (half of a 400 ms cap) decides.
    expect(slept).toEqual([2_000, 7_000, 200]);
  });

  it('gives up at once, with the key, when Retry-After points past maxElapsedMs', async () => {
    const { client, sent, slept } = harness([{ status: 503, headers: { 'retry-after': '120' } }]);

    const error = await failure(client.charge(request, { key: 'order-2', maxElapsedMs: 60_000 }));

    expect(error.code).toBe('charge_retries_exhausted');
    expect(error.key).toBe('order-2');
    expect(error.response?.headers.get('retry-after')).toBe('120');
    expect(sent).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it('stops after `retries`, carrying the last response', async () => {
    const { client, sent } = harness([
      { status: 503, body: '{"n":1}' },
      { status: 502, body: '{"n":2}' },
      { status: 504, body: '{"n":3}' },
      { status: 201 },
    ]);

    const error = await failure(client.charge(request, { retries: 2 }));

    expect(error.code).toBe('charge_retries_exhausted');
    expect(error.attempts).toBe(3);
    expect(error.response).toMatchObject({ status: 504, body: '{"n":3}' });
    expect(error.httpStatus).toBe(504);
    expect(sent).toHaveLength(3);
  });

  it('keeps the last response when the last attempt got none', async () => {
    const { client } = harness([{ status: 503, body: '{"n":1}' }, { fail: 'network' }]);

    const error = await failure(client.charge(request, { retries: 1 }));

    expect(error.code).toBe('charge_retries_exhausted');
    expect(error.response?.body).toBe('{"n":1}');
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it('stops once maxElapsedMs has passed on the clock', async () => {
    const steps: Step[] = Array.from({ length: 50 }, () => ({ status: 503 }));
    const { client, slept } = harness(steps, {
      random: () => 0.999,
      baseDelayMs: 1_000,
      maxDelayMs: 4_000,
      retries: 100,
    });

    const error = await failure(client.charge(request, { maxElapsedMs: 10_000 }));

    expect(error.code).toBe('charge_retries_exhausted');
    // 999 + 1998 + 3996 = 6993; a fourth wait of 3996 would end past 10 000.
    expect(slept).toEqual([999, 1_998, 3_996]);
    expect(error.attempts).toBe(4);
  });

  it('stops at once when the signal aborts during a wait, with the key', async () => {
    const controller = new AbortController();
    const { client, sent } = harness([{ status: 503 }, { status: 201 }], {
      sleep: (_ms, signal) => {
        controller.abort(new Error('user left'));
        return signal?.aborted ? Promise.reject(new Error('aborted')) : Promise.resolve();
      },
    });

    const error = await failure(
      client.charge(request, { key: 'order-3', signal: controller.signal }),
    );

    expect(error.code).toBe('charge_aborted');
    expect(error.key).toBe('order-3');
    expect(error.response?.status).toBe(503);
    expect(sent).toHaveLength(1);
  });

  it('does not start when the signal already aborted', async () => {
    const { client, sent } = harness([{ status: 201 }]);
    const error = await failure(client.charge(request, { signal: AbortSignal.abort() }));
    expect(error.code).toBe('charge_aborted');
    expect(sent).toHaveLength(0);
  });
});

describe('chargeClient: retry policy', () => {
  it('draws full jitter below a doubling cap', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1_000, random: () => 0.999 };
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffDelay(n, options))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
    expect(backoffDelay(3, { ...options, random: () => 0 })).toBe(0);
  });

  it('reads Retry-After as seconds or as a date, and ignores anything else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it('refuses a base URL that is not one', () => {
    expect(() => createChargeClient({ baseUrl: 'not a url' })).toThrow(InvalidConfigurationError);
    expect(() => createChargeClient({ baseUrl: 'http://x', retries: -1 })).toThrow(
      InvalidConfigurationError,
    );
  });
});
