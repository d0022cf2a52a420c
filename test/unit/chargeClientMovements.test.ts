import { describe, expect, it } from 'vitest';
import {
  ChargeClientError,
  createChargeClient,
  type ChargeClientOptions,
} from '../../src/client/index.js';
import { InvalidRequestError } from '../../src/index.js';

const ID = '3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a0b1c';

type Step = { status: number; body?: string; headers?: Record<string, string> } | 'network';

/** A scripted server; `sleep` does not wait, it records. */
function harness(steps: Step[], options: Partial<ChargeClientOptions> = {}) {
  const sent: { url: string; method: string; key: string | null; body: string }[] = [];
  const slept: number[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    sent.push({
      url: input instanceof Request ? input.url : input.toString(),
      method: init?.method ?? 'GET',
      key: headers.get('idempotency-key'),
      body: typeof init?.body === 'string' ? init.body : '',
    });
    const step = steps.shift();
    if (step === undefined) return Promise.reject(new Error('the script ran out'));
    if (step === 'network') {
      return Promise.reject(
        new TypeError('fetch failed', {
          cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
        }),
      );
    }
    return Promise.resolve(
      new Response(step.body ?? '{"object":"refund"}', {
        status: step.status,
        headers: { 'content-type': 'application/json', ...step.headers },
      }),
    );
  };
  const client = createChargeClient({
    baseUrl: 'http://127.0.0.1:1/api/',
    fetch,
    random: () => 0.5,
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
    ...options,
  });
  return { client, sent, slept };
}

describe('client.refund', () => {
  it('POSTs below the charge route, one key and the same bytes on every attempt', async () => {
    const { client, sent } = harness(['network', { status: 503 }, { status: 201 }]);

    const result = await client.refund(ID, { amountMinor: 500, reason: 'duplicate' });

    expect(result).toMatchObject({ status: 201, attempts: 3, body: '{"object":"refund"}' });
    expect(sent.map((s) => s.url)).toEqual(
      Array(3).fill(`http://127.0.0.1:1/api/charges/${ID}/refunds`),
    );
    expect(sent.every((s) => s.method === 'POST' && s.key === result.key)).toBe(true);
    expect(new Set(sent.map((s) => s.body))).toEqual(
      new Set(['{"amountMinor":500,"reason":"duplicate"}']),
    );
  });

  it('uses the key given, and percent-encodes the charge id as one segment', async () => {
    const { client, sent } = harness([{ status: 201 }], { path: '/v2/charges/' });

    const result = await client.refund('ch/1?x#y%', { amountMinor: 1 }, { key: 'refund-1' });

    expect(result.key).toBe('refund-1');
    expect(sent[0]?.url).toBe('http://127.0.0.1:1/api/v2/charges/ch%2F1%3Fx%23y%25/refunds');
  });

  it('resolves with the provider’s refusal (402): it is the answer', async () => {
    const { client, sent } = harness([{ status: 402, body: '{"status":"failed"}' }]);
    await expect(client.refund(ID, { amountMinor: 1 })).resolves.toMatchObject({ status: 402 });
    expect(sent).toHaveLength(1);
  });

  it('gives up at once on a refusal by chargeonce (422), saying it was a refund', async () => {
    const body = '{"object":"refund","status":"refused","refusal":"exceeds_refundable"}';
    const { client, sent, slept } = harness([{ status: 422, body }]);

    const error = await client.refund(ID, { amountMinor: 1 }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ChargeClientError);
    expect(error).toMatchObject({
      code: 'charge_refused',
      operation: 'refund',
      httpStatus: 422,
      attempts: 1,
      message: 'The refund was refused with status 422.',
    });
    expect((error as ChargeClientError).response?.body).toBe(body);
    expect(sent).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it('never retries a 501 or a 404 (the server does not serve refunds there)', async () => {
    for (const status of [501, 404]) {
      const { client, sent } = harness([{ status, body: '{"error":{"code":"x"}}' }]);
      await expect(client.refund(ID, { amountMinor: 1 })).rejects.toMatchObject({
        code: 'charge_refused',
        httpStatus: status,
      });
      expect(sent).toHaveLength(1);
    }
  });

  it.each(['', '.', '..', 'x'.repeat(256), 42])(
    'refuses the charge id %j before sending anything',
    async (chargeId) => {
      const { client, sent } = harness([]);
      const error = await client
        .refund(chargeId as string, { amountMinor: 1 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect((error as InvalidRequestError).issues[0]?.field).toBe('chargeId');
      expect(sent).toHaveLength(0);
    },
  );

  it('refuses an invalid key before sending anything', async () => {
    const { client, sent } = harness([]);
    await expect(client.refund(ID, { amountMinor: 1 }, { key: 'clé' })).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    expect(sent).toHaveLength(0);
  });

  it('stops when out of retries, with the key to resume and operation refund', async () => {
    const { client, sent } = harness([{ status: 503 }, { status: 503 }], { retries: 1 });
    const error = await client.refund(ID, { amountMinor: 1 }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'charge_retries_exhausted',
      operation: 'refund',
      key: sent[0]?.key,
      attempts: 2,
    });
  });
});

describe('client.capture', () => {
  it('sends {} when no amount is given, and the amount when it is', async () => {
    const { client, sent } = harness([{ status: 201 }, { status: 201 }]);

    await client.capture(ID);
    await client.capture(ID, { amountMinor: 700 }, { key: 'capture-1' });

    expect(sent.map(({ url, body, key }) => ({ url, body, key }))).toEqual([
      {
        url: `http://127.0.0.1:1/api/charges/${ID}/capture`,
        body: '{}',
        key: expect.any(String) as string,
      },
      {
        url: `http://127.0.0.1:1/api/charges/${ID}/capture`,
        body: '{"amountMinor":700}',
        key: 'capture-1',
      },
    ]);
  });

  it('retries a 409 as charge does, honouring Retry-After, and reports the replay', async () => {
    const { client, sent, slept } = harness([
      { status: 409, headers: { 'retry-after': '2' } },
      { status: 201, headers: { 'idempotent-replayed': 'true' } },
    ]);

    const result = await client.capture(ID);

    expect(slept).toEqual([2_000]);
    expect(result).toMatchObject({ status: 201, replayed: true, attempts: 2 });
    expect(sent[1]?.key).toBe(sent[0]?.key);
  });

  it('gives up on a stored refusal replayed, whatever its status, saying it was a capture', async () => {
    const { client } = harness([{ status: 410, headers: { 'idempotent-replayed': 'true' } }]);
    await expect(client.capture(ID)).rejects.toMatchObject({
      code: 'charge_refused',
      operation: 'capture',
      httpStatus: 410,
    });
  });
});

describe('client.charge', () => {
  it('still says it was a charge', async () => {
    const { client } = harness([{ status: 400, body: '{"error":{"code":"invalid_request"}}' }]);
    await expect(
      client.charge({ customerId: 'c', amountMinor: 1, currency: 'NGN' }),
    ).rejects.toMatchObject({
      operation: 'charge',
      message: 'The charge was refused with status 400.',
    });
  });
});
