import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { Hono } from 'hono';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createChargeEngine, type ChargeEngine } from '../../src/index.js';
import {
  chargeOnceFastify,
  createChargeHandler,
  createFetchHandler,
  type ChargeHandler,
} from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aKey } from '../support/charges.js';
import { errorOf, send, type RawResponse } from '../support/httpRequest.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
let engine: ChargeEngine;
let handler: ChargeHandler;
const provider = createFakeProvider({ dedupe: false });
const authenticate = (req: IncomingMessage) =>
  req.headers.authorization === 'Bearer tok_fw' ? 'm_frameworks' : null;
beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider });
  handler = createChargeHandler(engine, { authenticate, maxBodyBytes: 1_000 });
});
afterAll(async () => {
  await db.drop();
});

const payload = { customerId: 'c_fw', amountMinor: 990, currency: 'NGN' };

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return send(url, {
    headers: {
      authorization: 'Bearer tok_fw',
      'content-type': 'application/json',
      'idempotency-key': aKey(),
      ...headers,
    },
    body,
  });
}

/** A charge and its replay: one provider charge, the same bytes, marked as a replay. */
async function chargesOnce(url: string): Promise<RawResponse> {
  const key = aKey();
  const ledgerBefore = provider.ledger().length;
  const first = await post(url, JSON.stringify(payload), { 'idempotency-key': key });
  const replay = await post(url, JSON.stringify(payload), { 'idempotency-key': `"${key}"` });

  expect(first.status).toBe(201);
  expect(JSON.parse(first.text)).toMatchObject({ merchantId: 'm_frameworks', amountMinor: 990 });
  expect(replay.status).toBe(201);
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.bytes.equals(first.bytes)).toBe(true);
  expect(provider.ledger().length - ledgerBefore).toBe(1);
  return first;
}

/** The edge's own refusals: malformed JSON, an oversized body, no credentials. */
async function refusesLikeTheEdge(url: string) {
  const malformed = await post(url, '{');
  const tooLarge = await post(url, 'x'.repeat(5_000));
  const anonymous = await post(url, JSON.stringify(payload), { authorization: '' });

  expect(malformed.status).toBe(400);
  expect(errorOf(malformed).fields).toEqual([{ field: 'body', message: 'must be valid JSON' }]);
  expect(tooLarge.status).toBe(413);
  expect(anonymous.status).toBe(401);
}

async function serveExpress(app: express.Express): Promise<RunningServer> {
  return listen(app.listen(0, '127.0.0.1'));
}

async function withServer(server: RunningServer, test: (url: string) => Promise<void>) {
  try {
    await test(`${server.url}/charges`);
  } finally {
    await server.close();
  }
}

describe('the node handler under Express 5', () => {
  it('reads the body itself when no body parser ran', async () => {
    const app = express();
    app.post('/charges', handler);
    await withServer(await serveExpress(app), async (url) => {
      await chargesOnce(url);
      await refusesLikeTheEdge(url);
    });
  });

  it('takes the body express.json() parsed, mounted for the whole app', async () => {
    const app = express();
    app.use(express.json());
    app.post('/charges', handler);
    await withServer(await serveExpress(app), async (url) => {
      await chargesOnce(url);
      const merchant = await post(url, JSON.stringify({ ...payload, merchantId: 'm_other' }));
      const invalid = await post(url, JSON.stringify({ ...payload, amountMinor: '990', x: 1 }));
      const array = await post(url, '[1,2]');
      const anonymous = await post(url, JSON.stringify(payload), { authorization: '' });

      expect(errorOf(merchant).fields?.map((f) => f.field)).toEqual(['merchantId']);
      expect(errorOf(invalid).fields).toEqual([
        { field: 'amountMinor', message: 'must be a number' },
        { field: 'x', message: 'is not a known field' },
      ]);
      expect(errorOf(array).fields).toEqual([{ field: 'body', message: 'must be a JSON object' }]);
      expect(anonymous.status).toBe(401);
    });
  });

  it('measures a parsed body by its compact JSON against maxBodyBytes', async () => {
    const app = express();
    app.use(express.json());
    app.post('/charges', handler);
    await withServer(await serveExpress(app), async (url) => {
      // Over 1,000 bytes on the wire, mostly white space: its compact JSON fits in 1,000.
      const compact = JSON.stringify({ ...payload, description: 'd'.repeat(500) });
      const spacious = `{${' '.repeat(600)}${compact.slice(1)}`;
      expect(Buffer.byteLength(spacious)).toBeGreaterThan(1_000);
      // A compact body past the limit.
      const large = JSON.stringify({ ...payload, description: 'd'.repeat(980) });

      const fits = await post(url, spacious);
      const tooLarge = await post(url, large);

      expect(fits.status).toBe(201);
      expect(tooLarge.status).toBe(413);
      expect(errorOf(tooLarge).code).toBe('payload_too_large');
    });
  });

  it('takes the text express.text() read, and the bytes express.raw() read', async () => {
    for (const parser of [
      express.text({ type: 'application/json' }),
      express.raw({ type: () => true, limit: '1mb' }),
    ]) {
      const app = express();
      app.use(parser);
      app.post('/charges', handler);
      await withServer(await serveExpress(app), async (url) => {
        await chargesOnce(url);
        await refusesLikeTheEdge(url);
      });
    }
  });

  it('reads the stream when express.json() skipped the request (no JSON Content-Type)', async () => {
    const app = express();
    app.use(express.json());
    app.post('/charges', handler);
    await withServer(await serveExpress(app), async (url) => {
      const key = aKey();
      const response = await send(url, {
        headers: { authorization: 'Bearer tok_fw', 'idempotency-key': key },
        body: JSON.stringify(payload),
      });
      expect(response.status).toBe(201);
    });
  });

  it('answers 500, and tells onError, when a middleware read the body and kept nothing', async () => {
    const onError = vi.fn();
    const strict = createChargeHandler(engine, { authenticate, onError });
    const app = express();
    // Reads the stream to its end and throws it away, as a logging middleware might.
    app.use((req, _res, next) => {
      req.on('end', () => next());
      req.resume();
    });
    app.post('/charges', strict);
    await withServer(await serveExpress(app), async (url) => {
      const response = await post(url, JSON.stringify(payload));

      expect(response.status).toBe(500);
      expect(errorOf(response).code).toBe('internal_error');
      expect(onError).toHaveBeenCalledTimes(1);
      expect(String(onError.mock.calls[0]?.[0])).toMatch(/read before the charge handler ran/);
    });
  });
});

describe('Fastify 5', () => {
  async function serveFastify(app: FastifyInstance, test: (url: string) => Promise<void>) {
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as AddressInfo;
      await test(`http://127.0.0.1:${port}/charges`);
    } finally {
      await app.close();
    }
  }

  it('the plugin under fastify.inject() (no socket, no headersDistinct): the same answers', async () => {
    const app = Fastify();
    await app.register(chargeOnceFastify, {
      engine,
      authenticate: (request) =>
        request.headers.authorization === 'Bearer tok_fw' ? 'm_frameworks' : null,
      path: '/charges',
    });
    const key = aKey();
    const charge = () =>
      app.inject({
        method: 'POST',
        url: '/charges',
        headers: {
          authorization: 'Bearer tok_fw',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        payload: JSON.stringify({ customerId: 'c_1', amountMinor: 700, currency: 'NGN' }),
      });

    const first = await charge();
    const again = await charge();
    const noKey = await app.inject({
      method: 'POST',
      url: '/charges',
      headers: { authorization: 'Bearer tok_fw', 'content-type': 'application/json' },
      payload: '{}',
    });

    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(noKey.statusCode).toBe(400);
    expect(noKey.body).toContain('Idempotency-Key');
    await app.close();
  });

  it('the plugin: registered under a path, other routes keep their parsers', async () => {
    const app = Fastify();
    await app.register(chargeOnceFastify, {
      engine,
      authenticate: (request) =>
        request.headers.authorization === 'Bearer tok_fw' ? 'm_frameworks' : null,
      maxBodyBytes: 1_000,
      path: '/charges',
    });
    app.post('/echo', (request) => request.body);
    await serveFastify(app, async (url) => {
      await chargesOnce(url);
      await refusesLikeTheEdge(url);
      const echo = await send(url.replace('/charges', '/echo'), {
        headers: { 'content-type': 'application/json' },
        body: '{"parsed":true}',
      });
      expect(JSON.parse(echo.text)).toEqual({ parsed: true });
    });
  });

  it('the plugin answers through Fastify: its onSend hooks see the answer', async () => {
    const app = Fastify();
    const seen: number[] = [];
    app.addHook('onSend', (_request, reply, body, done) => {
      seen.push(reply.statusCode);
      done(null, body);
    });
    await app.register(chargeOnceFastify, {
      engine,
      authenticate: () => 'm_frameworks',
      prefix: '/v1',
    });
    await serveFastify(app, async (url) => {
      const response = await post(url.replace('/charges', '/v1/charges'), '{');
      expect(response.status).toBe(400);
      expect(seen).toEqual([400]);
    });
  });

  it('the plugin refuses to register without an engine or authenticate', async () => {
    const app = Fastify();
    await expect(
      app.register(chargeOnceFastify, { engine, authenticate: undefined as never }).ready(),
    ).rejects.toMatchObject({ code: 'invalid_configuration' });
    await app.close();
  });

  it("the node handler on a route where Fastify's JSON parser ran: the parsed body", async () => {
    const app = Fastify();
    app.post('/charges', async (request, reply) => {
      reply.hijack();
      // Fastify keeps the parsed body on its own request, not on the raw one.
      await handler(Object.assign(request.raw, { body: request.body }), reply.raw);
    });
    await serveFastify(app, async (url) => {
      await chargesOnce(url);
      const invalid = await post(url, JSON.stringify({ ...payload, currency: 7 }));
      expect(errorOf(invalid).fields).toEqual([{ field: 'currency', message: 'must be a string' }]);
    });
  });

  it('the node handler on a route with the body left unparsed and the reply hijacked', async () => {
    const app: FastifyInstance = Fastify();
    await app.register((scope, _options, registered) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
      scope.post('/charges', async (request, reply) => {
        reply.hijack();
        await handler(request.raw, reply.raw);
      });
      registered();
    });
    await serveFastify(app, async (url) => {
      await chargesOnce(url);
      await refusesLikeTheEdge(url);
    });
  });
});

describe('the Fetch handler', () => {
  it('under Hono, given c.req.raw', async () => {
    const fetchHandler = createFetchHandler({
      engine,
      authenticate: (request) =>
        request.headers.get('authorization') === 'Bearer tok_fw' ? 'm_frameworks' : null,
      maxBodyBytes: 1_000,
    });
    const app = new Hono();
    app.post('/charges', (c) => fetchHandler(c.req.raw));
    const key = aKey();
    const request = () =>
      new Request('http://shop.test/charges', {
        method: 'POST',
        headers: {
          authorization: 'Bearer tok_fw',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify(payload),
      });

    const first = await app.request(request());
    const replay = await app.request(request());

    expect(first.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.text()).toBe(await first.text());
  });

  it('as a Next.js route handler (export const POST), and refuses a body already read', async () => {
    const onError = vi.fn();
    const route = {
      POST: createFetchHandler({ engine, authenticate: () => 'm_frameworks', onError }),
    };
    const request = new Request('http://shop.test/api/charges', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': aKey() },
      body: JSON.stringify(payload),
    });

    const charged = await route.POST(request.clone());
    await request.json();
    const consumed = await route.POST(request);

    expect(charged.status).toBe(201);
    expect(consumed.status).toBe(500);
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it('cannot be created without an engine or authenticate', () => {
    expect(() =>
      createFetchHandler({ authenticate: () => 'm' } as unknown as Parameters<
        typeof createFetchHandler
      >[0]),
    ).toThrow(/engine is required/);
    expect(() =>
      createFetchHandler({ engine } as unknown as Parameters<typeof createFetchHandler>[0]),
    ).toThrow(/authenticate is required/);
  });
});
