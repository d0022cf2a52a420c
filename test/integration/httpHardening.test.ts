import express from 'express';
import Fastify from 'fastify';
import type { IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createChargeEngine, type ChargeEngine } from '../../src/index.js';
import {
  chargeOnceFastify,
  createChargeHandler,
  createFetchHandler,
  type ChargeHandlerOptions,
} from '../../src/http/index.js';
import { MAX_REPORTED_ISSUES, METADATA_LIMITS } from '../../src/request.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, aKey, countRows } from '../support/charges.js';
import { errorOf, send } from '../support/httpRequest.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
let engine: ChargeEngine;
const provider = createFakeProvider({ dedupe: false });
beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider });
});
afterAll(async () => {
  await db.drop();
});

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const authenticate = (req: IncomingMessage) =>
  req.headers.authorization === 'Bearer tok_h' ? 'm_hardening' : null;

async function serve(options: Partial<ChargeHandlerOptions> = {}) {
  const handler = createChargeHandler(engine, { authenticate, onError: () => {}, ...options });
  const settled: Promise<void>[] = [];
  const server = await listen((req, res) => {
    settled.push(handler(req, res));
  });
  servers.push(server);
  return { url: `${server.url}/charges`, port: server.port, settled };
}

function post(url: string, body: string) {
  return send(url, {
    headers: {
      authorization: 'Bearer tok_h',
      'content-type': 'application/json',
      'idempotency-key': aKey(),
    },
    body,
  });
}

const valid = { customerId: 'c_h', amountMinor: 700, currency: 'NGN' };

describe('a refusal costs no more than the limit it enforces', () => {
  it('refuses 12,000 metadata keys with one issue, without looking at a value', async () => {
    const { url } = await serve();
    // Values that are not even strings: were the entries checked one by one, each would be an
    // issue of its own.
    const metadata = Object.fromEntries(
      Array.from({ length: 12_000 }, (_, i) => [i.toString(36), 1]),
    );
    const body = JSON.stringify({ ...valid, metadata });
    expect(Buffer.byteLength(body)).toBeLessThan(102_400);

    const refused = await post(url, body);

    expect(refused.status).toBe(400);
    expect(errorOf(refused).fields).toEqual([
      { field: 'metadata', message: `must have at most ${METADATA_LIMITS.maxKeys} keys` },
    ]);
    expect(refused.bytes.length).toBeLessThan(300);
  });

  it('refuses a body of 10,000 fields with one issue, before parsing it', async () => {
    const { url } = await serve();
    const unknown = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [`u${i.toString(36)}`, 1]),
    );

    const refused = await post(url, JSON.stringify({ ...valid, ...unknown }));

    expect(refused.status).toBe(400);
    expect(errorOf(refused).fields).toEqual([
      { field: 'body', message: `has more than ${METADATA_LIMITS.maxKeys} fields` },
    ]);
  });

  it(`names at most ${MAX_REPORTED_ISSUES} unknown fields, each once`, async () => {
    const { url } = await serve();
    const unknown = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`u${i}`, 1]));

    const refused = await post(url, JSON.stringify({ ...valid, ...unknown }));

    expect(refused.status).toBe(400);
    const fields = errorOf(refused).fields ?? [];
    expect(fields).toHaveLength(MAX_REPORTED_ISSUES);
    expect(fields[0]).toEqual({ field: 'u0', message: 'is not a known field' });
    // Said once: the message does not list them again.
    expect(refused.text.split('"u0"').length - 1).toBe(1);
    expect(refused.bytes.length).toBeLessThan(2_000);
  });

  it('bounds the refusal of a body a parser already made into 12,000 keys too', async () => {
    const handler = createChargeHandler(engine, { authenticate, onError: () => {} });
    const app = express();
    app.use(express.json({ limit: '1mb' }));
    app.post('/charges', handler);
    const server = await listen(app.listen(0, '127.0.0.1'));
    servers.push(server);
    const url = `${server.url}/charges`;
    const metadata = Object.fromEntries(
      Array.from({ length: 12_000 }, (_, i) => [i.toString(36), 1]),
    );
    const unknown = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [`u${i.toString(36)}`, 1]),
    );

    const crowdedMetadata = await post(url, JSON.stringify({ ...valid, metadata }));
    const crowdedBody = await post(url, JSON.stringify({ ...valid, ...unknown }));

    expect(errorOf(crowdedMetadata).fields).toEqual([
      { field: 'metadata', message: `must have at most ${METADATA_LIMITS.maxKeys} keys` },
    ]);
    expect(errorOf(crowdedBody).fields).toHaveLength(MAX_REPORTED_ISSUES);
    expect(crowdedBody.bytes.length).toBeLessThan(2_000);
  });

  it('cuts short a field name it echoes back (a 5,000-character metadata key)', async () => {
    const { url } = await serve();
    const long = 'k'.repeat(5_000);

    const refused = await post(url, JSON.stringify({ ...valid, metadata: { [long]: 'v' } }));

    const [issue] = errorOf(refused).fields ?? [];
    expect(issue?.message).toBe(`must be at most ${METADATA_LIMITS.maxKeyLength} characters`);
    expect(issue?.field.length).toBeLessThanOrEqual(101);
    expect(refused.bytes.length).toBeLessThan(400);
  });

  it('caps the issues of 50 bad metadata entries', async () => {
    const { url } = await serve();
    const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));

    const refused = await post(url, JSON.stringify({ ...valid, metadata }));

    const fields = errorOf(refused).fields ?? [];
    expect(fields).toHaveLength(MAX_REPORTED_ISSUES);
    expect(fields[0]).toEqual({ field: 'metadata.k0', message: 'must be a string' });
  });
});

/** A raw connection: what the server sends back, and whether it closed its end. */
function openConnection(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  socket.on('error', () => {});
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const answered = new Promise<string>((resolve) => {
    const check = () => {
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const length = /content-length: (\d+)/i.exec(received.subarray(0, headEnd).toString())?.[1];
      if (length !== undefined && received.length >= headEnd + 4 + Number(length)) {
        socket.off('data', check);
        resolve(received.toString());
      }
    };
    socket.on('data', check);
  });
  return { socket, answered, ended };
}

/** Request headers for a chunked body, and the first chunk of it; the body never ends. */
function endlessUpload(headers: Record<string, string>, method = 'POST'): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  const chunk = '{"customerId":"c_h",';
  return (
    `${method} /charges HTTP/1.1\r\nhost: localhost\r\ntransfer-encoding: chunked\r\n` +
    `${lines.join('')}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`
  );
}

const GOOD = {
  authorization: 'Bearer tok_h',
  'content-type': 'application/json',
  'idempotency-key': 'key-upload',
};

describe('a body that names a field twice', () => {
  it('is refused 400 naming the field, with nothing written, whichever value comes last', async () => {
    const { url } = await serve();
    const before = await countRows(db.pool, db.tables.keys);
    for (const body of [
      '{"customerId":"c_h","currency":"NGN","amountMinor":700,"amountMinor":70000}',
      '{"customerId":"c_h","currency":"NGN","amountMinor":70000,"amountMinor":700}',
    ]) {
      const refused = await post(url, body);
      expect(refused.status).toBe(400);
      expect(errorOf(refused).fields).toEqual([
        { field: 'amountMinor', message: 'is given more than once' },
      ]);
    }
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
  });
});

describe('refusals before the body close the connection instead of reading it', () => {
  const refusals: Array<[string, Record<string, string>, string, number]> = [
    ['401 (no credentials)', { ...GOOD, authorization: 'Bearer wrong' }, 'POST', 401],
    ['400 (no key)', { authorization: GOOD.authorization }, 'POST', 400],
    ['400 (a badly quoted key)', { ...GOOD, 'idempotency-key': '"unterminated' }, 'POST', 400],
    ['405 (a PUT)', GOOD, 'PUT', 405],
    ['415 (not JSON)', { ...GOOD, 'content-type': 'text/plain' }, 'POST', 415],
  ];

  it.each(refusals)('%s: answered, then closed while the upload is still going', async (...c) => {
    const [, headers, method, status] = c;
    const { port } = await serve();
    const connection = openConnection(port);

    connection.socket.write(endlessUpload(headers, method));
    const answer = await connection.answered;
    // The client keeps uploading; the server has stopped reading and closes.
    connection.socket.write('5\r\n"abc"\r\n');
    await connection.ended;

    expect(answer.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    expect(answer.toLowerCase()).toContain('connection: close');
  });

  it('the Fastify plugin closes the same way', async () => {
    const app = Fastify();
    await app.register(chargeOnceFastify, {
      engine,
      authenticate: (request) => authenticate(request.raw),
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const connection = openConnection((app.server.address() as AddressInfo).port);
      connection.socket.write(endlessUpload({ ...GOOD, authorization: '' }));
      const answer = await connection.answered;
      await connection.ended;
      expect(answer.startsWith('HTTP/1.1 401 ')).toBe(true);
      expect(answer.toLowerCase()).toContain('connection: close');
    } finally {
      await app.close();
    }
  });

  it('a refusal after the body was read keeps the connection for the next request', async () => {
    const { port } = await serve();
    const connection = openConnection(port);
    const malformed = '{"customerId":';

    connection.socket.write(
      `POST /charges HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer tok_h\r\n` +
        `idempotency-key: ${aKey()}\r\ncontent-type: application/json\r\n` +
        `content-length: ${malformed.length}\r\n\r\n${malformed}`,
    );
    const answer = await connection.answered;
    connection.socket.destroy();

    expect(answer.startsWith('HTTP/1.1 400 ')).toBe(true);
    expect(answer.toLowerCase()).not.toContain('connection: close');
  });
});

describe('a client that hangs up while authenticate runs', () => {
  it.each([
    ['with its body half sent', false],
    ['with its whole body sent', true],
  ])('%s: the handler settles, and nothing is written', async (_name, whole) => {
    const gate = aGate();
    let requestClosed!: () => void;
    const closed = new Promise<void>((resolve) => (requestClosed = resolve));
    const { port, settled } = await serve({
      authenticate: async (req) => {
        req.socket.once('close', () => requestClosed());
        await gate.wait();
        return authenticate(req);
      },
    });
    const before = await countRows(db.pool, db.tables.keys);
    const connection = openConnection(port);
    const body = JSON.stringify(valid);

    connection.socket.write(
      `POST /charges HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer tok_h\r\n` +
        `idempotency-key: ${aKey()}\r\ncontent-type: application/json\r\n` +
        `content-length: ${body.length}\r\n\r\n${whole ? body : body.slice(0, 10)}`,
    );
    // The handler is inside `authenticate` when the client goes.
    await new Promise<void>((resolve) => {
      const check = () => (settled.length === 1 ? resolve() : setImmediate(check));
      check();
    });
    connection.socket.destroy();
    await closed;
    gate.open();

    await expect(settled[0]).resolves.toBeUndefined();
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
  });

  it('the Fetch handler settles too, when the request is aborted', async () => {
    const gate = aGate();
    const controller = new AbortController();
    const handler = createFetchHandler({
      engine,
      authenticate: async () => {
        await gate.wait();
        return 'm_hardening';
      },
    });
    const request = new Request('http://shop.test/charges', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': aKey() },
      body: JSON.stringify(valid),
      signal: controller.signal,
    });
    const before = await countRows(db.pool, db.tables.keys);

    const answered = handler(request);
    controller.abort();
    gate.open();

    expect((await answered).status).toBe(499);
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
  });

  it('the Fetch handler settles when the body breaks off', async () => {
    const handler = createFetchHandler({ engine, authenticate: () => 'm_hardening' });
    let pulls = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls += 1;
        if (pulls === 1) controller.enqueue(new TextEncoder().encode('{"customerId":'));
        else controller.error(new Error('connection reset'));
      },
    });
    const init: RequestInit & { duplex: 'half' } = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': aKey() },
      body,
      duplex: 'half',
    };
    const request = new Request('http://shop.test/charges', init);

    expect((await handler(request)).status).toBe(499);
  });
});
