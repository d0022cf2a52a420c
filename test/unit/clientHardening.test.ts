import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ChargeClientError,
  createChargeClient,
  MAX_RETRY_DELAY_MS,
  type ChargeClientOptions,
} from '../../src/client/index.js';
import { InvalidConfigurationError } from '../../src/errors.js';

const request = { customerId: 'c_42', amountMinor: 2000, currency: 'NGN' };

/** A fetch that answers every attempt with `answer()`, and counts the attempts. */
function scripted(answer: () => Response | Promise<never>) {
  const calls = { count: 0 };
  const fetch: typeof globalThis.fetch = () => {
    calls.count += 1;
    const response = answer();
    return response instanceof Response ? Promise.resolve(response) : response;
  };
  return { fetch, calls };
}

function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (error: unknown) => error,
  );
}

describe('chargeClient: every wait is bounded', () => {
  it('gives up at once on a Retry-After of 10^9 s, on the real timer (was: 6 attempts in 18 ms)', async () => {
    const { fetch, calls } = scripted(
      () => new Response('{}', { status: 503, headers: { 'retry-after': '1000000000' } }),
    );
    // The longest deadline a client may set; no injected sleep: the real timer would overflow.
    const client = createChargeClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch,
      maxElapsedMs: Number.MAX_VALUE,
      retries: 5,
    });

    const error = await refusal(client.charge(request, { key: 'order-1' }));

    expect(error).toBeInstanceOf(ChargeClientError);
    expect(error).toMatchObject({ code: 'charge_retries_exhausted', key: 'order-1', attempts: 1 });
    expect(calls.count).toBe(1);
  });

  it(`waits a Retry-After of up to ${MAX_RETRY_DELAY_MS / 1000} s, and gives up on a longer one`, async () => {
    const run = async (retryAfter: string) => {
      const slept: number[] = [];
      let first = true;
      const { fetch, calls } = scripted(() => {
        const status = first ? 429 : 201;
        first = false;
        return new Response('{}', { status, headers: { 'retry-after': retryAfter } });
      });
      const client = createChargeClient({
        baseUrl: 'http://127.0.0.1:1',
        fetch,
        maxElapsedMs: 3_600_000,
        sleep: (ms) => {
          slept.push(ms);
          return Promise.resolve();
        },
      });
      const outcome = await client.charge(request).then(
        (result) => result.status,
        (error: ChargeClientError) => error.code,
      );
      return { outcome, slept, attempts: calls.count };
    };

    expect(await run('60')).toEqual({ outcome: 201, slept: [60_000], attempts: 2 });
    expect(await run('61')).toEqual({
      outcome: 'charge_retries_exhausted',
      slept: [],
      attempts: 1,
    });
    expect(await run(new Date(Date.now() + 3_600_000).toUTCString())).toMatchObject({
      outcome: 'charge_retries_exhausted',
      slept: [],
    });
  });

  it('never asks its sleep for more than MAX_RETRY_DELAY_MS, nor for a non-finite wait', async () => {
    const retryAfter = fc.oneof(
      fc.constant(null),
      fc.nat({ max: 200 }).map(String),
      fc.constantFrom('1e9', '9'.repeat(400), '-5', 'soon', 'Fri, 31 Dec 9999 23:59:59 GMT'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom(408, 409, 429, 502, 503, 504), retryAfter), {
          minLength: 1,
          maxLength: 12,
        }),
        fc.record({
          baseDelayMs: fc.double({ min: 0, max: 1e12, noNaN: true }),
          maxDelayMs: fc.double({ min: 0, max: MAX_RETRY_DELAY_MS, noNaN: true }),
          random: fc.constantFrom(
            () => 0.999,
            () => Number.NaN,
            () => 2,
          ),
        }),
        async (answers, options) => {
          const slept: number[] = [];
          const queue = [...answers];
          const { fetch } = scripted(() => {
            const [status, after] = queue.shift() ?? [201, null];
            const headers: Record<string, string> = after === null ? {} : { 'retry-after': after };
            return new Response('{}', { status, headers });
          });
          const client = createChargeClient({
            baseUrl: 'http://127.0.0.1:1',
            fetch,
            retries: 20,
            maxElapsedMs: 1e15,
            sleep: (ms) => {
              slept.push(ms);
              return Promise.resolve();
            },
            ...options,
          });
          await client.charge(request).catch(() => undefined);
          for (const ms of slept) {
            expect(Number.isFinite(ms)).toBe(true);
            expect(ms).toBeGreaterThanOrEqual(0);
            expect(ms).toBeLessThanOrEqual(MAX_RETRY_DELAY_MS);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('chargeClient: options are refused at construction, not obeyed as a loop', () => {
  const base = { baseUrl: 'http://127.0.0.1:1' } satisfies ChargeClientOptions;

  it.each<[keyof ChargeClientOptions, unknown]>([
    ['maxElapsedMs', Number.POSITIVE_INFINITY],
    ['maxElapsedMs', Number.NaN],
    ['maxElapsedMs', -1],
    ['retries', Number.POSITIVE_INFINITY],
    ['retries', 1.5],
    ['retries', -1],
    ['attemptTimeoutMs', 0],
    ['attemptTimeoutMs', 2 ** 31],
    ['attemptTimeoutMs', Number.POSITIVE_INFINITY],
    ['baseDelayMs', Number.POSITIVE_INFINITY],
    ['baseDelayMs', -0.5],
    ['maxDelayMs', MAX_RETRY_DELAY_MS + 1],
    ['maxDelayMs', Number.POSITIVE_INFINITY],
    ['maxDelayMs', '100'],
  ])('refuses %s: %s', (name, value) => {
    expect(() => createChargeClient({ ...base, [name]: value })).toThrow(
      new RegExp(`^${name} must be`),
    );
    expect(() => createChargeClient({ ...base, [name]: value })).toThrow(InvalidConfigurationError);
  });

  it('refuses the same values for one charge, before sending anything', async () => {
    const { fetch, calls } = scripted(() => new Response('{}', { status: 201 }));
    const client = createChargeClient({ ...base, fetch });

    for (const options of [
      { maxElapsedMs: Number.POSITIVE_INFINITY },
      { retries: Number.POSITIVE_INFINITY },
      { retries: -1 },
    ]) {
      await expect(client.charge(request, options)).rejects.toBeInstanceOf(
        InvalidConfigurationError,
      );
    }
    expect(calls.count).toBe(0);
  });

  it('refuses a baseUrl with credentials, and never quotes them', () => {
    for (const baseUrl of [
      'https://alice:s3cr3t-pw@pay.example.com/api',
      new URL('https://alice:s3cr3t-pw@pay.example.com'),
      'https://s3cr3t-token@pay.example.com',
    ]) {
      let error: unknown;
      try {
        createChargeClient({ baseUrl });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidConfigurationError);
      const everything = `${String(error)} ${JSON.stringify(error)} ${String((error as Error).cause)} ${(error as Error).stack}`;
      expect(everything).toContain('credentials');
      expect(everything).not.toContain('s3cr3t');
      expect(everything).not.toContain('alice');
    }
  });

  it('refuses a baseUrl that is not an absolute http(s) URL, without quoting it', () => {
    for (const baseUrl of ['not a url s3cr3t', 'ftp://pay.example.com', 'file:///etc/passwd']) {
      let error: unknown;
      try {
        createChargeClient({ baseUrl });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(InvalidConfigurationError);
      expect((error as Error).cause).toBeUndefined();
      expect((error as Error).message).not.toContain('s3cr3t');
    }
  });

  it('refuses a key header name or a header that fetch would refuse, without quoting values', () => {
    expect(() => createChargeClient({ ...base, keyHeader: 'Idempotency Key' })).toThrow(
      /keyHeader/,
    );
    let error: unknown;
    try {
      createChargeClient({ ...base, headers: { authorization: 'Bearer s3cr3t\nx' } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect((error as Error).message).not.toContain('s3cr3t');
  });
});

describe('chargeClient: failures of fetch', () => {
  it('retries a TypeError it does not know as a network error, and gives up with the key', async () => {
    // A custom fetch's own words for a lost connection: p-retry's list does not have them.
    const lost = new TypeError('The socket closed before the answer came');
    const { fetch, calls } = scripted(() => Promise.reject(lost));
    const client = createChargeClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch,
      retries: 2,
      sleep: () => Promise.resolve(),
    });

    const error = await refusal(client.charge(request, { key: 'k_custom_fetch' }));

    expect(error).toBeInstanceOf(ChargeClientError);
    expect(error).toMatchObject({
      code: 'charge_retries_exhausted',
      key: 'k_custom_fetch',
      attempts: 3,
    });
    expect((error as Error).cause).toBe(lost);
    expect(calls.count).toBe(3);
  });

  it('still retries a network error, and reports it as the cause when retries run out', async () => {
    const network = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') });
    const { fetch, calls } = scripted(() => Promise.reject(network));
    const client = createChargeClient({
      baseUrl: 'http://127.0.0.1:1',
      fetch,
      retries: 2,
      sleep: () => Promise.resolve(),
    });

    const error = await refusal(client.charge(request));

    expect(error).toMatchObject({ code: 'charge_retries_exhausted', attempts: 3 });
    expect((error as Error).cause).toBe(network);
    expect(calls.count).toBe(3);
  });

  it('retries a real connection refusal through the real fetch', async () => {
    const client = createChargeClient({
      baseUrl: 'http://127.0.0.1:1',
      retries: 1,
      sleep: () => Promise.resolve(),
    });
    const error = await refusal(client.charge(request));
    expect(error).toMatchObject({ code: 'charge_retries_exhausted', attempts: 2 });
  });
});
