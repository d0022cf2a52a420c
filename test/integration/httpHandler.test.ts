import type { IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ChargeOnceError,
  ChargeRejectedError,
  createChargeEngine,
  InvalidConfigurationError,
  type ChargeEngine,
} from '../../src/index.js';
import { createChargeHandler, type ChargeHandlerOptions } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, aKey, countRows, readKey, waitFor } from '../support/charges.js';
import { errorOf, send, type RawResponse } from '../support/httpRequest.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { closedPortUrl } from '../support/closedPortUrl.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Two merchants, each with its token. */
const TOKENS: Record<string, string> = { 'Bearer tok_a': 'm_http_a', 'Bearer tok_b': 'm_http_b' };
const authenticate = (req: IncomingMessage) => TOKENS[req.headers.authorization ?? ''] ?? null;

async function serve(
  engine: Pick<ChargeEngine, 'processCharge'>,
  options: Partial<ChargeHandlerOptions> = {},
) {
  const handler = createChargeHandler(engine, { authenticate, onError: () => {}, ...options });
  const server = await listen((req, res) => void handler(req, res));
  servers.push(server);
  return `${server.url}/charges`;
}

function setup(options: { hooks?: Parameters<typeof createChargeEngine>[0]['hooks'] } = {}) {
  const provider = createFakeProvider({ dedupe: false });
  const engine = createChargeEngine({ pool: db.pgPool, provider, hooks: options.hooks });
  return { provider, engine };
}

const body = { customerId: 'c_42', amountMinor: 2000, currency: 'NGN' };

function charge(
  url: string,
  key: string | string[] | undefined,
  payload: unknown = body,
  token = 'Bearer tok_a',
) {
  return send(url, {
    headers: {
      authorization: token,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
}

function expectError(response: RawResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe('application/json');
  expect(errorOf(response).code).toBe(code);
}

describe('charge handler: outcomes', () => {
  it('answers 201 with the stored body; a retry replays the same bytes, marked as a replay', async () => {
    const { provider, engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    const first = await charge(url, key, {
      ...body,
      description: 'Ñandú order',
      metadata: { a: 'é' },
    });
    const replay = await charge(url, key, {
      ...body,
      description: 'Ñandú order',
      metadata: { a: 'é' },
    });

    expect(first.status).toBe(201);
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(first.text)).toMatchObject({ status: 'succeeded', merchantId: 'm_http_a' });
    const stored = await readKey(db.pool, db.tables, 'm_http_a', key);
    expect(first.bytes.equals(Buffer.from(stored?.response_body ?? '', 'utf8'))).toBe(true);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('writes a decline as its outcome: 402 and the stored body, on the first answer too', async () => {
    const { provider, engine } = setup();
    const url = await serve(engine);
    const key = aKey();
    provider.failNext('decline');

    const first = await charge(url, key);
    const replay = await charge(url, key);

    expect(first.status).toBe(402);
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(first.text)).toMatchObject({
      status: 'declined',
      declineCode: 'card_declined',
    });
    expect(replay.status).toBe(402);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.bytes.equals(first.bytes)).toBe(true);
  });

  it("writes a reserve hook's rejection exactly as the hook gave it", async () => {
    const rejection = '{"reason":"out_of_stock","sku":"A-1"}';
    const { provider, engine } = setup({
      hooks: {
        reserve: () => Promise.reject(new ChargeRejectedError(409, rejection)),
      },
    });
    const url = await serve(engine);
    const key = aKey();

    const first = await charge(url, key);
    const replay = await charge(url, key);

    expect(first.status).toBe(409);
    expect(first.text).toBe(rejection);
    expect(first.headers['content-type']).toBe('application/json');
    // An outcome, not the in-progress error: no Retry-After.
    expect(first.headers['retry-after']).toBeUndefined();
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.status).toBe(409);
    expect(replay.text).toBe(rejection);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(provider.calls.createCharge).toBe(0);
  });
});

describe('charge handler: refusals that leave the key unused', () => {
  it('answers 400 naming the header when the key is missing, repeated or invalid', async () => {
    const { engine } = setup();
    const url = await serve(engine);
    const before = await countRows(db.pool, db.tables.keys);

    const missing = await charge(url, undefined);
    const repeated = await charge(url, [aKey(), aKey()]);
    const tooLong = await charge(url, 'k'.repeat(256));
    const notAscii = await charge(url, 'clé-\u00e9');

    for (const response of [missing, repeated, tooLong, notAscii]) {
      expectError(response, 400, 'invalid_request');
      expect(errorOf(response).fields?.map((f) => f.field)).toEqual(['Idempotency-Key']);
    }
    expect(errorOf(missing).fields?.[0]?.message).toBe('is required');
    expect(errorOf(repeated).fields?.[0]?.message).toBe('must be sent once');
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
  });

  it('uses the configured key header', async () => {
    const { engine } = setup();
    const url = await serve(engine, { keyHeader: 'X-Request-Key' });
    const key = aKey();

    const wrongHeader = await charge(url, key);
    const ok = await send(url, {
      headers: {
        authorization: 'Bearer tok_a',
        'content-type': 'application/json',
        'x-request-key': key,
      },
      body: JSON.stringify(body),
    });

    expectError(wrongHeader, 400, 'invalid_request');
    expect(errorOf(wrongHeader).fields?.[0]?.field).toBe('X-Request-Key');
    expect(ok.status).toBe(201);
  });

  it.each([
    ['malformed JSON', '{"customerId": "c_42",', 'body', 'must be valid JSON'],
    ['an empty body', '', 'body', 'is required'],
    ['a JSON array', '[1,2]', 'body', 'must be a JSON object'],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'body', 'must be UTF-8'],
  ])(
    'answers 400 for %s, and the key then charges normally',
    async (_, payload, field, message) => {
      const { provider, engine } = setup();
      const url = await serve(engine);
      const key = aKey();

      const refused = await send(url, {
        headers: {
          authorization: 'Bearer tok_a',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: payload,
      });
      expectError(refused, 400, 'invalid_request');
      expect(errorOf(refused).fields).toEqual([{ field, message }]);
      expect(await readKey(db.pool, db.tables, 'm_http_a', key)).toBeNull();

      const retried = await charge(url, key);
      expect(retried.status).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(provider.ledger()).toHaveLength(1);
    },
  );

  it('answers 400 naming each invalid field, and the key is not consumed', async () => {
    const { engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    const refused = await charge(url, key, {
      customerId: 'c_42',
      amountMinor: -5,
      currency: 'ngn',
      extra: 1,
    });

    expectError(refused, 400, 'invalid_request');
    // An unknown field is named by its own name, and each problem is said once, in `fields`.
    expect(errorOf(refused).fields).toEqual([
      { field: 'amountMinor', message: 'must be positive' },
      { field: 'currency', message: 'must be three upper-case letters (ISO 4217)' },
      { field: 'extra', message: 'is not a known field' },
    ]);
    expect(errorOf(refused).message).not.toContain('must be positive');
    expect(await readKey(db.pool, db.tables, 'm_http_a', key)).toBeNull();
    expect((await charge(url, key)).status).toBe(201);
  });

  it('refuses a body that names a merchant: the merchant is the one authenticated', async () => {
    const { provider, engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    const other = await charge(url, key, { ...body, merchantId: 'm_http_b' });
    const same = await charge(url, key, { ...body, merchantId: 'm_http_a' });

    for (const response of [other, same]) {
      expectError(response, 400, 'invalid_request');
      expect(errorOf(response).fields?.map((f) => f.field)).toEqual(['merchantId']);
    }
    expect(provider.calls.createCharge).toBe(0);
    expect(await readKey(db.pool, db.tables, 'm_http_b', key)).toBeNull();
  });

  it('answers 405 to anything but POST, and 415 to a body that is not JSON', async () => {
    const { engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    const get = await send(url, {
      method: 'GET',
      headers: { authorization: 'Bearer tok_a', 'idempotency-key': key },
    });
    const text = await send(url, {
      headers: {
        authorization: 'Bearer tok_a',
        'content-type': 'text/plain',
        'idempotency-key': key,
      },
      body: JSON.stringify(body),
    });
    const noType = await send(url, {
      headers: { authorization: 'Bearer tok_a', 'idempotency-key': key },
      body: JSON.stringify(body),
    });

    expectError(get, 405, 'method_not_allowed');
    expect(get.headers.allow).toBe('POST');
    expectError(text, 415, 'unsupported_media_type');
    // No Content-Type at all is taken as JSON; the key was still unused.
    expect(noType.status).toBe(201);
    expect(noType.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('charge handler: authentication', () => {
  it('answers 401 before reading the body or claiming the key', async () => {
    const { provider, engine } = setup();
    const seen: string[] = [];
    const url = await serve(engine, {
      maxBodyBytes: 100,
      authenticate: (req) => {
        seen.push(req.headers.authorization ?? '');
        // The body is still unread when authentication runs.
        expect(req.readableEnded).toBe(false);
        return authenticate(req);
      },
    });
    const key = aKey();

    const noToken = await charge(url, key, body, '');
    const badToken = await charge(url, key, body, 'Bearer nope');
    const hugeBody = await charge(url, key, 'x'.repeat(10_000), 'Bearer nope');
    const malformed = await charge(url, key, '{', 'Bearer nope');

    for (const response of [noToken, badToken, hugeBody, malformed]) {
      expectError(response, 401, 'unauthenticated');
      expect(response.headers['www-authenticate']).toBe('Bearer');
    }
    expect(seen).toEqual(['', 'Bearer nope', 'Bearer nope', 'Bearer nope']);
    expect(await readKey(db.pool, db.tables, 'm_http_a', key)).toBeNull();
    const ok = await charge(url, key);
    expect(ok.status).toBe(201);
    expect(ok.headers['idempotent-replayed']).toBeUndefined();
    expect(provider.ledger()).toHaveLength(1);
  });

  it('scopes keys by the authenticated merchant', async () => {
    const { provider, engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    const a = await charge(url, key, body, 'Bearer tok_a');
    const b = await charge(url, key, { ...body, amountMinor: 7 }, 'Bearer tok_b');

    expect([a.status, b.status]).toEqual([201, 201]);
    expect(JSON.parse(a.text)).toMatchObject({ merchantId: 'm_http_a', amountMinor: 2000 });
    expect(JSON.parse(b.text)).toMatchObject({ merchantId: 'm_http_b', amountMinor: 7 });
    expect(provider.ledger()).toHaveLength(2);
  });

  it('answers a ChargeOnceError from authenticate with its status, and anything else with 500', async () => {
    const { engine } = setup();
    const onError = vi.fn();
    const down = await serve(engine, {
      onError,
      authenticate: () => {
        throw new ChargeOnceError('store_unavailable', 503, 'The identity service is unavailable.');
      },
    });
    const broken = await serve(engine, {
      onError,
      authenticate: () => Promise.reject(new Error('token cache exploded')),
    });

    const unavailable = await charge(down, aKey());
    const failed = await charge(broken, aKey());

    expectError(unavailable, 503, 'store_unavailable');
    expect(unavailable.headers['retry-after']).toBe('1');
    expectError(failed, 500, 'internal_error');
    expect(failed.text).not.toContain('exploded');
    expect(onError).toHaveBeenCalledTimes(2);
  });

  it('can be created from one options object that holds the engine', async () => {
    const { provider, engine } = setup();
    const handler = createChargeHandler({ engine, authenticate, onError: () => {} });
    const server = await listen((req, res) => void handler(req, res));
    servers.push(server);

    const charged = await charge(`${server.url}/charges`, aKey());

    expect(charged.status).toBe(201);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('cannot be created without authenticate', () => {
    const { engine } = setup();
    expect(() => createChargeHandler(engine, {} as unknown as ChargeHandlerOptions)).toThrow(
      InvalidConfigurationError,
    );
    expect(() => createChargeHandler(engine, { authenticate, maxBodyBytes: 0 })).toThrow(
      InvalidConfigurationError,
    );
  });
});

describe('charge handler: body limit', () => {
  it('answers 413 to a declared length over the limit, and the key stays unused', async () => {
    const { engine } = setup();
    const url = await serve(engine, { maxBodyBytes: 200 });
    const key = aKey();

    const refused = await charge(url, key, { ...body, description: 'x'.repeat(300) });

    expectError(refused, 413, 'payload_too_large');
    expect(refused.headers.connection).toBe('close');
    expect(await readKey(db.pool, db.tables, 'm_http_a', key)).toBeNull();
    expect((await charge(url, key)).status).toBe(201);
  });

  it('answers 413 to a chunked body that grows past the limit', async () => {
    const { engine } = setup();
    const url = await serve(engine, { maxBodyBytes: 200 });
    const key = aKey();
    const text = JSON.stringify({ ...body, description: 'x'.repeat(300) });

    const refused = await send(url, {
      headers: {
        authorization: 'Bearer tok_a',
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      chunks: [text.slice(0, 150), text.slice(150)],
    });
    const fits = await send(url, {
      headers: {
        authorization: 'Bearer tok_a',
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      chunks: [JSON.stringify(body).slice(0, 10), JSON.stringify(body).slice(10)],
    });

    expectError(refused, 413, 'payload_too_large');
    expect(fits.status).toBe(201);
  });
});

describe('charge handler: engine errors', () => {
  it('answers 422 to a key reused for a different request', async () => {
    const { engine } = setup();
    const url = await serve(engine);
    const key = aKey();

    await charge(url, key);
    const reused = await charge(url, key, { ...body, amountMinor: 1 });

    expectError(reused, 422, 'idempotency_key_reused');
    expect(reused.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers 409 with Retry-After while another attempt holds the key', async () => {
    const gate = aGate();
    const provider = createFakeProvider({ beforeAnswer: () => gate.wait() });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const url = await serve(engine);
    const key = aKey();

    const first = charge(url, key);
    await waitFor(() => Promise.resolve(provider.calls.createCharge === 1));
    const busy = await charge(url, key);
    gate.open();

    expectError(busy, 409, 'idempotency_key_in_use');
    // The engine suggests 50–1000 ms; whole seconds, rounded up.
    expect(busy.headers['retry-after']).toBe('1');
    expect((await first).status).toBe(201);
  });

  it('answers 503 with Retry-After when the provider is unavailable; a retry then charges', async () => {
    const { provider, engine } = setup();
    const url = await serve(engine);
    const key = aKey();
    provider.failNext('failAfterCharge');

    const unavailable = await charge(url, key);
    const retried = await charge(url, key);

    expectError(unavailable, 503, 'provider_unavailable');
    expect(Number(unavailable.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(unavailable.headers['retry-after']).toMatch(/^\d+$/);
    expect(retried.status).toBe(201);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('answers 503 with Retry-After when the database is out of reach', async () => {
    const engine = createChargeEngine({
      pool: await closedPortUrl(),
      provider: createFakeProvider(),
    });
    const onError = vi.fn();
    const url = await serve(engine, { onError });

    const unavailable = await charge(url, aKey());

    expectError(unavailable, 503, 'store_unavailable');
    expect(unavailable.headers['retry-after']).toBe('1');
    expect(onError).toHaveBeenCalledTimes(1);
    await engine.close();
  });

  it('answers 500 with a generic body to an unexpected error, and tells onError', async () => {
    const secret = new Error('password=hunter2 at /srv/app/orders.ts:42');
    const { engine } = setup({ hooks: { reserve: () => Promise.reject(secret) } });
    const onError = vi.fn();
    const url = await serve(engine, { onError });

    const failed = await charge(url, aKey());

    expect(failed.status).toBe(500);
    expect(JSON.parse(failed.text)).toEqual({
      error: { code: 'internal_error', message: 'Internal server error.' },
    });
    expect(onError).toHaveBeenCalledWith(secret, expect.anything());
  });

  it('still answers, and never rejects, when onError throws or rejects', async () => {
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => {});
    const engine = { processCharge: () => Promise.reject(new Error('engine exploded')) };
    const thrown = new Error('log shipper down');
    const rejected = new Error('async log shipper down');
    const failing: Array<() => void> = [
      () => {
        throw thrown;
      },
      // An async onError: its rejection must not become an unhandled one.
      () => Promise.reject(rejected),
    ];
    try {
      for (const onError of failing) {
        const handler = createChargeHandler(engine, { authenticate, onError });
        const settled: Promise<unknown>[] = [];
        const server = await listen((req, res) => {
          settled.push(
            handler(req, res).then(
              () => 'resolved',
              (e: unknown) => e,
            ),
          );
        });
        servers.push(server);

        const answered = charge(`${server.url}/charges`, aKey());
        await waitFor(() => Promise.resolve(settled.length === 1));

        expect(await settled[0]).toBe('resolved');
        expectError(await answered, 500, 'internal_error');
      }
      await waitFor(() => Promise.resolve(consoleError.mock.calls.length === 2));
      expect(consoleError.mock.calls.map((call): unknown => call[1])).toEqual([thrown, rejected]);
    } finally {
      consoleError.mockRestore();
    }
  });
});
