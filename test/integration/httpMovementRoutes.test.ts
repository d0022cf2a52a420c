import express from 'express';
import Fastify from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  type CaptureOutcome,
  type CaptureRequest,
  type ChargeEngine,
  type ChargeOutcome,
  type ChargeRequest,
  type RefundOutcome,
  type RefundRequest,
} from '../../src/index.js';
import {
  chargeOnceFastify,
  createChargeHandler,
  createFetchHandler,
  type ChargeEdgeEngine,
} from '../../src/http/index.js';
import { HttpEdgeError } from '../../src/http/HttpEdgeError.js';
import { aKey } from '../support/charges.js';
import { errorOf, send } from '../support/httpRequest.js';
import { listen, type RunningServer } from '../support/httpServer.js';

/**
 * The routes below a charge, tested at the edge: the engine is a small stand-in whose
 * outcomes are fixed here, so what is checked is what the edge asks of the engine and what it
 * answers with, on every way of mounting it.
 */

const MERCHANT = 'm_routes';
const CHARGE_ID = '3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a0b1c';

type Call =
  | { op: 'charge'; key: string; request: ChargeRequest }
  | { op: 'refund'; key: string; request: RefundRequest }
  | { op: 'capture'; key: string; request: CaptureRequest };

/** The stand-in's fixed outcomes: a refund of 201, a capture refused (422), each replayed once seen. */
function standIn() {
  const calls: Call[] = [];
  const seen = new Set<string>();
  const replayed = (key: string) => seen.has(key) || !seen.add(key);
  const engine: Pick<ChargeEngine, 'processCharge' | 'processRefund' | 'processCapture'> = {
    processCharge: (key, request) => {
      calls.push({ op: 'charge', key, request });
      const outcome: ChargeOutcome = {
        status: 'succeeded',
        httpStatus: 201,
        body: '{"object":"charge"}',
        replayed: replayed(key),
        chargeId: CHARGE_ID,
        providerChargeId: 'pc_1',
      };
      return Promise.resolve(outcome);
    },
    processRefund: (key, request) => {
      calls.push({ op: 'refund', key, request });
      if (request.amountMinor === 999) {
        return Promise.reject(new IdempotencyKeyReusedError({ differingFields: ['amountMinor'] }));
      }
      const outcome: RefundOutcome = {
        status: 'succeeded',
        httpStatus: 201,
        body: JSON.stringify({ object: 'refund', amountMinor: request.amountMinor, é: 'ü' }),
        replayed: replayed(key),
        refundId: randomUUID(),
        chargeId: request.chargeId,
        providerRefundId: 're_1',
      };
      return Promise.resolve(outcome);
    },
    processCapture: (key, request) => {
      calls.push({ op: 'capture', key, request });
      const outcome: CaptureOutcome = {
        status: 'refused',
        httpStatus: 422,
        body: '{"object":"capture","status":"refused","refusal":"charge_not_capturable"}',
        replayed: replayed(key),
        captureId: randomUUID(),
        chargeId: request.chargeId,
        providerCaptureId: null,
      };
      return Promise.resolve(outcome);
    },
  };
  return { engine, calls };
}

const authenticate = (req: IncomingMessage) =>
  req.headers.authorization === 'Bearer tok_routes' ? MERCHANT : null;

function post(url: string, body: string | undefined, headers: Record<string, string> = {}) {
  return send(url, {
    headers: {
      authorization: 'Bearer tok_routes',
      'content-type': 'application/json',
      'idempotency-key': aKey(),
      ...headers,
    },
    body,
  });
}

const servers: RunningServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function serve(
  engine: ChargeEdgeEngine,
  onError: (error: unknown) => void = () => {},
): Promise<string> {
  const handler = createChargeHandler(engine, { authenticate, onError });
  const server = await listen((req, res) => void handler(req, res));
  servers.push(server);
  return server.url;
}

describe('POST /charges/:id/refunds and /charges/:id/capture (node handler)', () => {
  const { engine, calls } = standIn();
  let base = '';
  beforeAll(async () => {
    base = await serve(engine);
  });

  it('asks processRefund for the authenticated merchant and the path’s charge, and answers its outcome', async () => {
    const key = aKey();
    const body = '{"amountMinor":500,"reason":"duplicate"}';
    const first = await post(`${base}/charges/${CHARGE_ID}/refunds`, body, {
      'idempotency-key': key,
    });
    const replay = await post(`${base}/charges/${CHARGE_ID}/refunds`, body, {
      'idempotency-key': `"${key}"`,
    });

    expect(first.status).toBe(201);
    expect(first.text).toBe('{"object":"refund","amountMinor":500,"é":"ü"}');
    expect(first.headers['content-length']).toBe(String(first.bytes.byteLength));
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.bytes.equals(first.bytes)).toBe(true);
    expect(calls.slice(-2)).toEqual([
      {
        op: 'refund',
        key,
        request: {
          merchantId: MERCHANT,
          chargeId: CHARGE_ID,
          amountMinor: 500,
          reason: 'duplicate',
        },
      },
      {
        op: 'refund',
        key,
        request: {
          merchantId: MERCHANT,
          chargeId: CHARGE_ID,
          amountMinor: 500,
          reason: 'duplicate',
        },
      },
    ]);
  });

  it('captures with no body, with {}, or with an amount; a refusal is answered as stored', async () => {
    const bare = await post(`${base}/charges/${CHARGE_ID}/capture`, undefined, {
      'content-type': '',
    });
    const empty = await post(`${base}/charges/${CHARGE_ID}/capture/`, '{}');
    const some = await post(
      `${base}/charges/${CHARGE_ID}/capture?source=test`,
      '{"amountMinor":7}',
    );

    for (const response of [bare, empty, some]) {
      expect(response.status).toBe(422);
      expect(JSON.parse(response.text)).toMatchObject({ refusal: 'charge_not_capturable' });
    }
    expect(calls.slice(-3).map((c) => c.request)).toEqual([
      { merchantId: MERCHANT, chargeId: CHARGE_ID },
      { merchantId: MERCHANT, chargeId: CHARGE_ID },
      { merchantId: MERCHANT, chargeId: CHARGE_ID, amountMinor: 7 },
    ]);
  });

  it('keeps every other path the charge route, as before', async () => {
    const payload = '{"customerId":"c_1","amountMinor":100,"currency":"NGN"}';
    for (const path of ['/charges', '/', '/api/charges/', '/anything']) {
      const response = await post(`${base}${path}`, payload);
      expect({ path, status: response.status }).toEqual({ path, status: 201 });
    }
    expect(calls.at(-1)).toMatchObject({ op: 'charge', request: { merchantId: MERCHANT } });
  });

  it('answers 404, closing, for a path below a charge that is no route, before anything else', async () => {
    const before = calls.length;
    for (const path of [
      `/charges/${CHARGE_ID}`,
      `/charges/${CHARGE_ID}/refund`,
      `/charges/${CHARGE_ID}/refunds/r_1`,
    ]) {
      const response = await post(`${base}${path}`, '{"amountMinor":1}', { authorization: '' });
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(errorOf(response).code).toBe('not_found');
      expect(response.headers['connection']).toBe('close');
    }
    const problem = await send(`${base}/charges/${CHARGE_ID}/void`, {
      method: 'GET',
      headers: { accept: 'application/problem+json' },
    });
    expect(problem.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(problem.text)).toMatchObject({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      code: 'not_found',
    });
    expect(calls.length).toBe(before);
  });

  it('answers 405 to another method on a refund route', async () => {
    const response = await send(`${base}/charges/${CHARGE_ID}/refunds`, { method: 'GET' });
    expect(response.status).toBe(405);
    expect(response.headers['allow']).toBe('POST');
  });

  it('refuses a bad key and a bad path id in one 400, before the body, closing', async () => {
    const before = calls.length;
    const response = await post(`${base}/charges//refunds`, '{"amountMinor":1}', {
      'idempotency-key': '',
    });
    const tooLong = await post(`${base}/charges/${'x'.repeat(256)}/capture`, '{}');

    expect(response.status).toBe(400);
    expect(errorOf(response).fields).toEqual([
      { field: 'Idempotency-Key', message: 'must not be empty' },
      { field: 'chargeId', message: 'must not be empty' },
    ]);
    expect(response.headers['connection']).toBe('close');
    expect(errorOf(tooLong).fields).toEqual([
      { field: 'chargeId', message: 'must be at most 255 characters' },
    ]);
    expect(calls.length).toBe(before);
  });

  it('validates the body with the engine’s rules and words, naming every field', async () => {
    const before = calls.length;
    const response = await post(
      `${base}/charges/ch_1/refunds`,
      JSON.stringify({ chargeId: CHARGE_ID, amountMinor: 1.5, reason: 'x'.repeat(201), note: 1 }),
    );

    expect(response.status).toBe(400);
    expect(errorOf(response).fields).toEqual([
      { field: 'chargeId', message: 'must not be sent: the charge is the one in the path' },
      { field: 'chargeId', message: expect.stringMatching(/charge id/) as string },
      { field: 'amountMinor', message: 'must be an integer' },
      { field: 'reason', message: 'must be at most 200 characters' },
      { field: 'note', message: 'is not a known field' },
    ]);
    // Read to the end: the connection stays open.
    expect(response.headers['connection']).not.toBe('close');
    expect(calls.length).toBe(before);
  });

  it('answers the engine’s errors as for a charge: 422 naming the fields that differ', async () => {
    const response = await post(`${base}/charges/${CHARGE_ID}/refunds`, '{"amountMinor":999}');
    expect(response.status).toBe(422);
    expect(errorOf(response)).toMatchObject({
      code: 'idempotency_key_reused',
      fields: [
        { field: 'amountMinor', message: 'differs from the request first sent with this key' },
      ],
    });
  });
});

describe('an engine with processCharge alone', () => {
  it('still charges; refunds and captures answer 501, reported to onError with the reason', async () => {
    const { engine, calls } = standIn();
    const reported: unknown[] = [];
    const base = await serve({ processCharge: engine.processCharge }, (e) => reported.push(e));

    const charge = await post(
      `${base}/charges`,
      '{"customerId":"c","amountMinor":1,"currency":"NGN"}',
    );
    const refund = await post(`${base}/charges/${CHARGE_ID}/refunds`, '{"amountMinor":1}');
    const capture = await post(`${base}/charges/${CHARGE_ID}/capture`, '{}', {
      authorization: '',
    });

    expect(charge.status).toBe(201);
    expect(refund.status).toBe(501);
    expect(errorOf(refund)).toEqual({
      code: 'not_implemented',
      message: 'Refunds are not served here.',
    });
    expect(refund.headers['connection']).toBe('close');
    // Before authentication: the server does not offer it, whoever asks.
    expect(capture.status).toBe(501);
    expect(reported).toHaveLength(2);
    expect(reported[0]).toBeInstanceOf(HttpEdgeError);
    expect((reported[0] as Error).cause).toBeInstanceOf(InvalidConfigurationError);
    expect(String((reported[0] as Error).cause)).toMatch(/processRefund/);
    expect(calls.map((c) => c.op)).toEqual(['charge']);
  });

  it('refuses at creation an engine whose processRefund is not a function', () => {
    const { engine } = standIn();
    expect(() =>
      createChargeHandler({ ...engine, processRefund: 'yes' } as unknown as ChargeEdgeEngine, {
        authenticate,
      }),
    ).toThrow(InvalidConfigurationError);
  });
});

describe('the same routes on every mount', () => {
  it('Express, mounted with app.use below /charges (req.url is rewritten there)', async () => {
    const { engine, calls } = standIn();
    const app = express();
    app.use(express.json());
    app.use('/charges', createChargeHandler(engine, { authenticate }));
    const server = await listen(app.listen(0, '127.0.0.1'));
    servers.push(server);

    const refund = await post(`${server.url}/charges/${CHARGE_ID}/refunds`, '{"amountMinor":3}');
    const charge = await post(
      `${server.url}/charges`,
      '{"customerId":"c","amountMinor":1,"currency":"NGN"}',
    );
    const unknown = await post(`${server.url}/charges/${CHARGE_ID}`, '{}');

    expect(refund.status).toBe(201);
    expect(charge.status).toBe(201);
    expect(unknown.status).toBe(404);
    expect(calls.map((c) => c.op)).toEqual(['refund', 'charge']);
  });

  it('the Fetch handler under a Next.js-style path, percent-encoded id decoded', async () => {
    const { engine, calls } = standIn();
    const handler = createFetchHandler({
      engine,
      authenticate: (request) =>
        request.headers.get('authorization') === 'Bearer tok_routes' ? MERCHANT : null,
    });
    const response = await handler(
      new Request(`http://shop.test/api/charges/${CHARGE_ID.replace('-', '%2D')}/capture`, {
        method: 'POST',
        headers: { authorization: 'Bearer tok_routes', 'idempotency-key': aKey() },
      }),
    );

    expect(response.status).toBe(422);
    expect(calls).toEqual([
      {
        op: 'capture',
        key: expect.any(String) as string,
        request: { merchantId: MERCHANT, chargeId: CHARGE_ID },
      },
    ]);
  });

  it('Fastify with a prefix; a path below a charge route not named charges is 404', async () => {
    const { engine, calls } = standIn();
    const app = Fastify();
    await app.register(
      async (scope) => {
        await scope.register(chargeOnceFastify, {
          engine,
          authenticate: (request) => authenticate(request.raw),
        });
        await scope.register(chargeOnceFastify, {
          engine,
          path: '/pay',
          authenticate: (request) => authenticate(request.raw),
        });
      },
      { prefix: '/v1' },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const refund = await post(`${url}/v1/charges/${CHARGE_ID}/refunds`, '{"amountMinor":3}');
      const unknown = await post(`${url}/v1/charges/${CHARGE_ID}/refund`, '{"amountMinor":3}');
      const notBelowCharges = await post(`${url}/v1/pay/${CHARGE_ID}/refunds`, '{"amountMinor":3}');
      const charge = await post(
        `${url}/v1/pay`,
        '{"customerId":"c","amountMinor":1,"currency":"NGN"}',
      );

      expect(refund.status).toBe(201);
      expect(unknown.status).toBe(404);
      expect(errorOf(unknown).code).toBe('not_found');
      expect(notBelowCharges.status).toBe(404);
      expect(errorOf(notBelowCharges).code).toBe('not_found');
      expect(charge.status).toBe(201);
      expect(calls.map((c) => c.op)).toEqual(['refund', 'charge']);
    } finally {
      await app.close();
    }
  });
});
