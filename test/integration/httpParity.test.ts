import Fastify, { type FastifyInstance } from 'fastify';
import { Hono } from 'hono';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChargeOnceError,
  ChargeRejectedError,
  createChargeEngine,
  type ChargeEngine,
  type PaymentProvider,
} from '../../src/index.js';
import {
  chargeOnceFastify,
  createChargeHandler,
  createFetchHandler,
  type ChargeEdgeOptions,
} from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, aKey, waitFor } from '../support/charges.js';
import { send } from '../support/httpRequest.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

/**
 * One table of cases, run against every way the edge is mounted: node's http, the Fetch handler
 * (called as Bun, Deno or a Next.js route would), Hono (on the Fetch handler) and the Fastify
 * plugin. Each case must come out the same everywhere: status, headers and body.
 */

const MERCHANT = 'm_parity';

/** One request as it goes on the wire. */
type WireRequest = {
  method?: string;
  /** @defaultValue `'/charges'` */
  path?: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Sent in these pieces, without a Content-Length (chunked). */
  chunks?: string[];
};

/** What a case compares: the status, the headers the edge sets, and the body. */
type Observed = { status: number; headers: Record<string, string>; body: string };

type Target = { name: string; send(request: WireRequest): Promise<Observed> };

/** The headers the edge writes; a framework's own (Date, Server, keep-alive) are left out. */
const COMPARED = [
  'content-type',
  'content-length',
  'cache-control',
  'retry-after',
  'allow',
  'www-authenticate',
  'idempotent-replayed',
];

function observe(status: number, get: (name: string) => string | undefined, body: string) {
  const headers: Record<string, string> = {};
  for (const name of COMPARED) {
    const value = get(name);
    if (value !== undefined) headers[name] = value;
  }
  // Over HTTP an open connection says keep-alive (or nothing); only a close is the edge's.
  if (get('connection')?.toLowerCase() === 'close') headers['connection'] = 'close';
  return { status, headers, body };
}

function fromIncoming(status: number, headers: IncomingHttpHeaders, body: string): Observed {
  return observe(
    status,
    (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body,
  );
}

async function fromResponse(response: Response): Promise<Observed> {
  const body = await response.text();
  return observe(response.status, (name) => response.headers.get(name) ?? undefined, body);
}

/** A Fetch `Request` carrying exactly what `send` would put on the wire. */
function toRequest(url: string, request: WireRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  let body: ReadableStream<Uint8Array> | Uint8Array | undefined;
  if (request.chunks) {
    const pieces = request.chunks.map((chunk) => new TextEncoder().encode(chunk));
    body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = pieces.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
  } else if (request.body !== undefined) {
    const bytes = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
    headers.set('content-length', String(bytes.byteLength));
    body = new Uint8Array(bytes);
  }
  // `duplex` is what Node asks of a streamed body; its types do not know it yet.
  const init: RequestInit & { duplex: 'half' } = {
    method: request.method ?? 'POST',
    headers,
    body,
    duplex: 'half',
  };
  return new Request(url, init);
}

function overHttp(name: string, url: () => string): Target {
  return {
    name,
    async send(request) {
      const response = await send(`${url()}${pathOf(request)}`, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        chunks: request.chunks,
      });
      return fromIncoming(response.status, response.headers, response.text);
    },
  };
}

/** The merchant of each token; two tokens make `authenticate` fail in the two ways it can. */
function merchantFor(authorization: string | null | undefined): string | null {
  if (authorization === 'Bearer tok_parity') return MERCHANT;
  if (authorization === 'Bearer tok_down') {
    throw new ChargeOnceError('store_unavailable', 503, 'The identity service is unavailable.');
  }
  if (authorization === 'Bearer tok_boom') throw new Error('token cache exploded');
  return null;
}

let db: TestDatabase;
const servers: RunningServer[] = [];
let fastify: FastifyInstance;
let fastifyUrl = '';
let nodeUrl = '';
/** Where each target's requests go: its origin, then the request's path. */
const pathOf = (request: WireRequest) => request.path ?? '/charges';
let targets: Target[] = [];
/** Opened by a case: charges for customer `c_slow` wait on it at the provider. */
let slowGate = aGate();
let slowCalls = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  const fake = createFakeProvider({ dedupe: false });
  const provider: PaymentProvider = {
    async createCharge(input, opts) {
      if (input.customerId === 'c_slow') {
        slowCalls += 1;
        await slowGate.wait();
      }
      if (input.customerId === 'c_unavailable') fake.failNext('failBeforeCharge');
      return fake.createCharge(input, opts);
    },
    findCharge: (providerKey, opts) => fake.findCharge(providerKey, opts),
    createRefund: (input, opts) => fake.createRefund(input, opts),
    findRefund: (providerKey, opts) => fake.findRefund(providerKey, opts),
    capture: (input, opts) => fake.capture(input, opts),
    findCapture: (input, opts) => fake.findCapture(input, opts),
  };
  const engine: ChargeEngine = createChargeEngine({
    pool: db.pgPool,
    provider,
    hooks: {
      // A business refusal stored with a status that carries no body.
      reserve: (_tx, ctx) =>
        ctx.request.customerId === 'c_no_content'
          ? Promise.reject(new ChargeRejectedError(204, ''))
          : Promise.resolve(),
    },
  });
  const common: Omit<ChargeEdgeOptions<unknown>, 'authenticate'> = {
    maxBodyBytes: 600,
    onError: () => {},
  };

  const node = createChargeHandler(engine, {
    ...common,
    authenticate: (req: IncomingMessage) => merchantFor(req.headers.authorization),
  });
  const nodeServer = await listen((req, res) => void node(req, res));
  servers.push(nodeServer);
  nodeUrl = nodeServer.url;

  const fetchHandler = createFetchHandler({
    ...common,
    engine,
    authenticate: (request) => merchantFor(request.headers.get('authorization')),
  });
  const hono = new Hono();
  hono.all('/charges', (c) => fetchHandler(c.req.raw));
  hono.all('/charges/*', (c) => fetchHandler(c.req.raw));

  fastify = Fastify();
  await fastify.register(chargeOnceFastify, {
    ...common,
    engine,
    path: '/charges',
    authenticate: (request) => merchantFor(request.headers.authorization),
  });
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  fastifyUrl = `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`;

  targets = [
    overHttp('node', () => nodeUrl),
    {
      name: 'fetch',
      send: async (request) =>
        fromResponse(await fetchHandler(toRequest(`http://edge.test${pathOf(request)}`, request))),
    },
    {
      name: 'hono',
      send: async (request) =>
        fromResponse(await hono.request(toRequest(`http://edge.test${pathOf(request)}`, request))),
    },
    overHttp('fastify', () => fastifyUrl),
  ];
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await fastify?.close();
  await db.drop();
});

const valid = { customerId: 'c_42', amountMinor: 2000, currency: 'NGN' };

function charge(
  key: string | string[] | undefined,
  payload: unknown = valid,
  headers: Record<string, string> = {},
): WireRequest {
  return {
    headers: {
      authorization: 'Bearer tok_parity',
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...headers,
    },
    body:
      typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : JSON.stringify(payload),
  };
}

/** A request to a route below a charge: a refund or a capture. */
function movement(
  path: string,
  key: string | undefined,
  payload: unknown,
  headers: Record<string, string> = {},
): WireRequest {
  return { ...charge(key, payload, headers), path };
}

/** Charges on `target` and gives the id of its charge, for the routes below it. */
async function chargeIdOn(target: Target, payload: unknown = valid): Promise<string> {
  const answer = await target.send(charge(aKey(), payload));
  expect(answer.status).toBe(201);
  return (JSON.parse(answer.body) as { id: string }).id;
}

/** A charge id no charge has: the routes below it are refused before the engine looks. */
const NO_CHARGE = '3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a0b1c';

/**
 * An outcome body (a charge, refund or capture: refused ones too) holds ids and a time of its
 * own on each target; they are blanked (same length, so Content-Length still compares) after
 * checking the length is the body's.
 */
function blankIds(observed: Observed): Observed {
  if (!observed.body.includes('"object":"')) return observed;
  expect(Number(observed.headers['content-length'])).toBe(Buffer.byteLength(observed.body));
  const body = observed.body.replace(
    /"(id|chargeId|providerChargeId|providerRefundId|providerCaptureId|created)":"([^"]*)"/g,
    (_, name: string, value: string) => `"${name}":"${'x'.repeat(value.length)}"`,
  );
  return { ...observed, body };
}

type Case = {
  name: string;
  run(target: Target): Promise<Observed[]>;
  /** What the node handler must answer, so the table cannot pass by all being wrong alike. */
  expect(observed: Observed[]): void;
};

function errorOf(observed: Observed | undefined): Record<string, unknown> {
  return (JSON.parse(observed?.body ?? '{}') as { error: Record<string, unknown> }).error;
}

/** A single request that is refused with `status` and `code`. */
function refusal(
  name: string,
  request: () => WireRequest,
  status: number,
  code: string,
  more: (observed: Observed) => void = () => {},
): Case {
  return {
    name,
    run: async (target) => [await target.send(request())],
    expect: ([observed]) => {
      expect(observed?.status).toBe(status);
      expect(errorOf(observed).code).toBe(code);
      if (observed) more(observed);
    },
  };
}

const closes = (observed: Observed) => expect(observed.headers['connection']).toBe('close');
const keepsOpen = (observed: Observed) => expect(observed.headers['connection']).toBeUndefined();

const CASES: Case[] = [
  {
    name: 'a charge, then its replay (byte for byte, marked), then a quoted key: the same key',
    run: async (target) => {
      const key = aKey();
      const first = await target.send(charge(key));
      const replay = await target.send(charge(key));
      const quoted = await target.send(charge(`"${key}"`));
      expect(replay.body).toBe(first.body);
      expect(quoted.body).toBe(first.body);
      return [first, replay, quoted].map(blankIds);
    },
    expect: ([first, replay, quoted]) => {
      expect(first?.status).toBe(201);
      expect(first?.headers['idempotent-replayed']).toBeUndefined();
      expect(JSON.parse(first?.body ?? '{}')).toMatchObject({ merchantId: MERCHANT });
      expect(replay?.headers['idempotent-replayed']).toBe('true');
      expect(quoted?.headers['idempotent-replayed']).toBe('true');
      keepsOpen(first as Observed);
    },
  },
  {
    name: 'a body without Content-Type is taken as JSON',
    run: async (target) => {
      const request = charge(aKey());
      const headers = { ...request.headers };
      delete headers['content-type'];
      return [blankIds(await target.send({ ...request, headers }))];
    },
    expect: ([observed]) => expect(observed?.status).toBe(201),
  },
  {
    name: 'a blank Content-Type is no type: the body is taken as JSON',
    run: async (target) => {
      const request = charge(aKey());
      const headers = { ...request.headers, 'content-type': '' };
      return [blankIds(await target.send({ ...request, headers }))];
    },
    expect: ([observed]) => expect(observed?.status).toBe(201),
  },
  {
    name: "a hook's rejection with 204 No Content, and its replay, without a body",
    run: async (target) => {
      const key = aKey();
      const rejected = { ...valid, customerId: 'c_no_content' };
      return [await target.send(charge(key, rejected)), await target.send(charge(key, rejected))];
    },
    expect: ([first, replay]) => {
      expect(first?.status).toBe(204);
      expect(first?.body).toBe('');
      expect(replay?.headers['idempotent-replayed']).toBe('true');
    },
  },
  {
    name: 'a key reused for another request: 422 naming the fields that differ, in both formats',
    run: async (target) => {
      const key = aKey();
      await target.send(charge(key, { ...valid, metadata: { order: '6', note: 'n' } }));
      const changed = { ...valid, amountMinor: 2500, metadata: { order: '7', note: 'n' } };
      return [
        await target.send(charge(key, changed)),
        await target.send(charge(key, changed, { accept: 'application/problem+json' })),
      ];
    },
    expect: ([json, problem]) => {
      expect(json?.status).toBe(422);
      expect(errorOf(json).fields).toEqual([
        { field: 'amountMinor', message: 'differs from the request first sent with this key' },
        { field: 'metadata.order', message: 'differs from the request first sent with this key' },
      ]);
      expect(problem?.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(problem?.body ?? '{}')).toMatchObject({
        type: 'about:blank',
        title: 'Unprocessable Entity',
        status: 422,
        code: 'idempotency_key_reused',
        fields: errorOf(json).fields,
      });
    },
  },
  {
    name: 'another attempt holds the key: 409 with Retry-After',
    run: async (target) => {
      slowGate = aGate();
      slowCalls = 0;
      const key = aKey();
      const slow = { ...valid, customerId: 'c_slow' };
      const first = target.send(charge(key, slow));
      await waitFor(() => Promise.resolve(slowCalls === 1));
      const busy = await target.send(charge(key, slow));
      slowGate.open();
      return [busy, blankIds(await first)];
    },
    expect: ([busy, first]) => {
      expect(busy?.status).toBe(409);
      expect(errorOf(busy).code).toBe('idempotency_key_in_use');
      expect(busy?.headers['retry-after']).toBe('1');
      expect(first?.status).toBe(201);
    },
  },
  refusal(
    'the provider unavailable: 503 with Retry-After',
    () => charge(aKey(), { ...valid, customerId: 'c_unavailable' }),
    503,
    'provider_unavailable',
    (observed) => expect(observed.headers['retry-after']).toMatch(/^\d+$/),
  ),
  refusal(
    'a GET: 405, closing',
    () => ({ method: 'GET' }),
    405,
    'method_not_allowed',
    (o) => {
      expect(o.headers['allow']).toBe('POST');
      closes(o);
    },
  ),
  refusal(
    'a PUT with a body: 405, closing',
    () => ({ ...charge(aKey()), method: 'PUT' }),
    405,
    'method_not_allowed',
    closes,
  ),
  refusal(
    'no credentials: 401 with a challenge, closing',
    () => charge(aKey(), valid, { authorization: '' }),
    401,
    'unauthenticated',
    (o) => {
      expect(o.headers['www-authenticate']).toBe('Bearer');
      closes(o);
    },
  ),
  refusal(
    'authenticate throws a ChargeOnceError: its status',
    () => charge(aKey(), valid, { authorization: 'Bearer tok_down' }),
    503,
    'store_unavailable',
    (o) => {
      expect(o.headers['retry-after']).toBe('1');
      closes(o);
    },
  ),
  refusal(
    'authenticate throws anything else: a bare 500',
    () => charge(aKey(), valid, { authorization: 'Bearer tok_boom' }),
    500,
    'internal_error',
    (o) => expect(o.body).not.toContain('exploded'),
  ),
  refusal(
    'no key: 400, closing',
    () => charge(undefined),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([{ field: 'Idempotency-Key', message: 'is required' }]);
      closes(o);
    },
  ),
  refusal(
    'two keys: 400, closing',
    () => charge([aKey(), aKey()]),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([
        { field: 'Idempotency-Key', message: 'must be sent once' },
      ]);
      closes(o);
    },
  ),
  refusal(
    'two quoted keys in one line: 400',
    () => charge(`"${aKey()}", "${aKey()}"`),
    400,
    'invalid_request',
    (o) =>
      expect(errorOf(o).fields).toEqual([
        { field: 'Idempotency-Key', message: 'must be sent once' },
      ]),
  ),
  refusal(
    'a badly quoted key: 400, closing',
    () => charge(`"${aKey()}`),
    400,
    'invalid_request',
    (o) => {
      expect((errorOf(o).fields as { message: string }[])[0]?.message).toMatch(/quoted/);
      closes(o);
    },
  ),
  refusal(
    'a key too long: 400 before the body, closing',
    () => charge('k'.repeat(256)),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([
        { field: 'Idempotency-Key', message: 'must be at most 255 characters' },
      ]);
      closes(o);
    },
  ),
  refusal(
    'a body that is not JSON: 415, closing',
    () => charge(aKey(), valid, { 'content-type': 'text/plain' }),
    415,
    'unsupported_media_type',
    closes,
  ),
  refusal(
    'a declared length past the limit: 413, closing',
    () => charge(aKey(), { ...valid, description: 'x'.repeat(700) }),
    413,
    'payload_too_large',
    closes,
  ),
  refusal(
    'a chunked body that grows past the limit: 413, closing',
    () => {
      const text = JSON.stringify({ ...valid, description: 'x'.repeat(700) });
      return { ...charge(aKey()), body: undefined, chunks: [text.slice(0, 300), text.slice(300)] };
    },
    413,
    'payload_too_large',
    closes,
  ),
  refusal(
    'malformed JSON: 400, kept open',
    () => charge(aKey(), '{"a":'),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([{ field: 'body', message: 'must be valid JSON' }]);
      keepsOpen(o);
    },
  ),
  refusal(
    'bytes that are not UTF-8: 400',
    () => charge(aKey(), Buffer.from([0x7b, 0xff, 0x7d])),
    400,
    'invalid_request',
    (o) => expect(errorOf(o).fields).toEqual([{ field: 'body', message: 'must be UTF-8' }]),
  ),
  refusal(
    'an empty body: 400',
    () => charge(aKey(), ''),
    400,
    'invalid_request',
    (o) => expect(errorOf(o).fields).toEqual([{ field: 'body', message: 'is required' }]),
  ),
  refusal(
    'a JSON array: 400',
    () => charge(aKey(), '[1]'),
    400,
    'invalid_request',
    (o) => expect(errorOf(o).fields).toEqual([{ field: 'body', message: 'must be a JSON object' }]),
  ),
  refusal(
    'a body naming a merchant: 400',
    () => charge(aKey(), { ...valid, merchantId: MERCHANT }),
    400,
    'invalid_request',
    (o) => expect((errorOf(o).fields as { field: string }[])[0]?.field).toBe('merchantId'),
  ),
  refusal(
    'invalid and unknown fields: 400 naming each on its own name',
    () => charge(aKey(), { customerId: 7, amountMinor: '1', currency: 'NGN', amount: 1 }),
    400,
    'invalid_request',
    (o) =>
      expect(errorOf(o).fields).toEqual([
        { field: 'customerId', message: 'must be a string' },
        { field: 'amountMinor', message: 'must be a number' },
        { field: 'amount', message: 'is not a known field' },
      ]),
  ),
  {
    name: 'a 400 as problem details when Accept asks for them',
    run: async (target) => [
      await target.send(
        charge(aKey(), { ...valid, currency: 'ngn' }, { accept: 'application/problem+json' }),
      ),
    ],
    expect: ([observed]) => {
      expect(observed?.status).toBe(400);
      expect(observed?.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(observed?.body ?? '{}')).toEqual({
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: expect.any(String) as string,
        code: 'invalid_request',
        fields: [{ field: 'currency', message: 'must be three upper-case letters (ISO 4217)' }],
      });
    },
  },
  {
    name: 'a refund, its replay (byte for byte, marked), and one past what is left: a stored 422 refusal',
    run: async (target) => {
      const path = `/charges/${await chargeIdOn(target)}/refunds`;
      const key = aKey();
      const over = aKey();
      const first = await target.send(movement(path, key, { amountMinor: 1500, reason: 'dup' }));
      const replay = await target.send(
        movement(path, `"${key}"`, { reason: 'dup', amountMinor: 1500 }),
      );
      const refused = await target.send(movement(path, over, { amountMinor: 501 }));
      const refusedAgain = await target.send(movement(path, over, { amountMinor: 501 }));
      expect(replay.body).toBe(first.body);
      expect(refusedAgain.body).toBe(refused.body);
      return [first, replay, refused, refusedAgain].map(blankIds);
    },
    expect: ([first, replay, refused, refusedAgain]) => {
      expect(first?.status).toBe(201);
      expect(JSON.parse(first?.body ?? '{}')).toMatchObject({
        object: 'refund',
        status: 'succeeded',
        amountMinor: 1500,
        reason: 'dup',
      });
      expect(first?.headers['idempotent-replayed']).toBeUndefined();
      expect(replay?.headers['idempotent-replayed']).toBe('true');
      expect(refused?.status).toBe(422);
      expect(JSON.parse(refused?.body ?? '{}')).toMatchObject({ refusal: 'exceeds_refundable' });
      expect(refused?.headers['idempotent-replayed']).toBeUndefined();
      expect(refusedAgain?.headers['idempotent-replayed']).toBe('true');
    },
  },
  {
    name: 'an authorization captured with no body at all; a capture under another key is refused',
    run: async (target) => {
      const path = `/charges/${await chargeIdOn(target, { ...valid, capture: false })}/capture`;
      const bare = charge(aKey());
      const headers = { ...bare.headers };
      delete headers['content-type'];
      const captured = await target.send({ headers, path });
      const again = await target.send(movement(path, aKey(), {}));
      return [captured, again].map(blankIds);
    },
    expect: ([captured, again]) => {
      expect(captured?.status).toBe(201);
      expect(JSON.parse(captured?.body ?? '{}')).toMatchObject({
        object: 'capture',
        status: 'succeeded',
        amountMinor: 2000,
      });
      expect(again?.status).toBe(422);
      expect(JSON.parse(again?.body ?? '{}')).toHaveProperty('refusal');
    },
  },
  {
    name: 'a key reused for another refund: 422 naming the field that differs',
    run: async (target) => {
      const path = `/charges/${await chargeIdOn(target)}/refunds`;
      const key = aKey();
      await target.send(movement(path, key, { amountMinor: 100 }));
      return [await target.send(movement(path, key, { amountMinor: 200 }))];
    },
    expect: ([observed]) => {
      expect(observed?.status).toBe(422);
      expect(errorOf(observed).fields).toEqual([
        { field: 'amountMinor', message: 'differs from the request first sent with this key' },
      ]);
    },
  },
  refusal(
    'a path below a charge that is no route: 404 before anything else, closing',
    () => movement(`/charges/${NO_CHARGE}/refund`, undefined, { amountMinor: 1 }),
    404,
    'not_found',
    closes,
  ),
  refusal(
    'a GET of a refund route: 405, closing',
    () => ({ method: 'GET', path: `/charges/${NO_CHARGE}/refunds` }),
    405,
    'method_not_allowed',
    (o) => {
      expect(o.headers['allow']).toBe('POST');
      closes(o);
    },
  ),
  refusal(
    'no charge id in the path and no key: one 400 naming both, closing',
    () => movement('/charges//refunds', undefined, { amountMinor: 1 }),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([
        { field: 'Idempotency-Key', message: 'is required' },
        { field: 'chargeId', message: 'must not be empty' },
      ]);
      closes(o);
    },
  ),
  refusal(
    'a refund body with bad, forbidden and unknown fields: 400 naming each, kept open',
    () =>
      movement(`/charges/${NO_CHARGE}/refunds`, aKey(), {
        chargeId: NO_CHARGE,
        amountMinor: 0,
        reason: 5,
        amount: 1,
      }),
    400,
    'invalid_request',
    (o) => {
      expect(errorOf(o).fields).toEqual([
        { field: 'chargeId', message: 'must not be sent: the charge is the one in the path' },
        { field: 'amountMinor', message: 'must be positive' },
        { field: 'reason', message: 'must be a string' },
        { field: 'amount', message: 'is not a known field' },
      ]);
      keepsOpen(o);
    },
  ),
  refusal(
    'a capture of an id that is no chargeonce charge id: 400 naming chargeId',
    () => movement('/charges/ch%5F1/capture', aKey(), { amountMinor: 1 }),
    400,
    'invalid_request',
    (o) =>
      expect(errorOf(o).fields).toEqual([
        {
          field: 'chargeId',
          message: "must be a chargeonce charge id (a lower-case UUID, the charge's `chargeId`)",
        },
      ]),
  ),
  refusal(
    'a refund body past the limit: 413, closing',
    () =>
      movement(`/charges/${NO_CHARGE}/refunds`, aKey(), {
        amountMinor: 1,
        reason: 'x'.repeat(700),
      }),
    413,
    'payload_too_large',
    closes,
  ),
];

describe('the same answers from every adapter', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, testCase) => {
    const byTarget = new Map<string, Observed[]>();
    for (const target of targets) byTarget.set(target.name, await testCase.run(target));

    const reference = byTarget.get('node') ?? [];
    testCase.expect(reference);
    for (const target of targets) {
      expect({ target: target.name, observed: byTarget.get(target.name) }).toEqual({
        target: target.name,
        observed: reference,
      });
    }
    expect([...byTarget.keys()]).toEqual(['node', 'fetch', 'hono', 'fastify']);
  });
});
