import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChargeEngine } from '../../src/index.js';
import { createChargeHandler, type ChargeHandler } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aKey } from '../support/charges.js';
import { errorOf, send } from '../support/httpRequest.js';
import { listen } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
let handler: ChargeHandler;
const provider = createFakeProvider({ dedupe: false });
beforeAll(async () => {
  db = await createTestDatabase();
  const engine = createChargeEngine({ pool: db.pool, provider });
  handler = createChargeHandler(engine, {
    authenticate: (req: IncomingMessage) =>
      req.headers.authorization === 'Bearer tok_fw' ? 'm_frameworks' : null,
    maxBodyBytes: 1_000,
  });
});
afterAll(async () => {
  await db.drop();
});

/** One charge, its replay, a malformed body, an oversized one and a missing token. */
async function exercise(url: string) {
  const key = aKey();
  const headers = {
    authorization: 'Bearer tok_fw',
    'content-type': 'application/json',
    'idempotency-key': key,
  };
  const payload = JSON.stringify({ customerId: 'c_fw', amountMinor: 990, currency: 'NGN' });
  const ledgerBefore = provider.ledger().length;

  const first = await send(url, { headers, body: payload });
  const replay = await send(url, { headers, body: payload });
  const malformed = await send(url, {
    headers: { ...headers, 'idempotency-key': aKey() },
    body: '{',
  });
  const tooLarge = await send(url, {
    headers: { ...headers, 'idempotency-key': aKey() },
    body: 'x'.repeat(5_000),
  });
  const anonymous = await send(url, {
    headers: { ...headers, authorization: '' },
    body: payload,
  });

  expect(first.status).toBe(201);
  expect(JSON.parse(first.text)).toMatchObject({ merchantId: 'm_frameworks', amountMinor: 990 });
  expect(replay.status).toBe(201);
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.bytes.equals(first.bytes)).toBe(true);
  expect(malformed.status).toBe(400);
  expect(errorOf(malformed).fields).toEqual([{ field: 'body', message: 'must be valid JSON' }]);
  expect(tooLarge.status).toBe(413);
  expect(anonymous.status).toBe(401);
  expect(provider.ledger().length - ledgerBefore).toBe(1);
}

describe('the charge handler in frameworks', () => {
  it('mounts on an Express 5 route', async () => {
    const app = express();
    // No express.json() on this route: the handler reads and limits the body itself.
    app.post('/charges', handler);
    const server = await listen(app.listen(0, '127.0.0.1'));
    try {
      await exercise(`${server.url}/charges`);
    } finally {
      await server.close();
    }
  });

  it('takes a body Express already read raw (express.raw)', async () => {
    const app = express();
    app.post('/charges', express.raw({ type: () => true, limit: '1mb' }), handler);
    const server = await listen(app.listen(0, '127.0.0.1'));
    try {
      await exercise(`${server.url}/charges`);
    } finally {
      await server.close();
    }
  });

  it('mounts on a Fastify 5 route, with the body left unparsed and the reply hijacked', async () => {
    const app: FastifyInstance = Fastify();
    await app.register((scope, _options, registered) => {
      // In this scope only: leave the body stream to the handler (Fastify's own parsers would
      // consume it, apply their own limit and refuse unknown types).
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
      scope.post('/charges', async (request, reply) => {
        reply.hijack();
        await handler(request.raw, reply.raw);
      });
      registered();
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = app.server.address() as AddressInfo;
      await exercise(`http://127.0.0.1:${port}/charges`);
    } finally {
      await app.close();
    }
  });
});
