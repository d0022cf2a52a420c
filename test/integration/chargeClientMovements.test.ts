import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChargeClientError,
  createChargeClient,
  type ChargeClient,
} from '../../src/client/index.js';
import { createChargeEngine } from '../../src/index.js';
import { createChargeHandler } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

/**
 * End to end: the client, over HTTP, the node handler, the real engine on PostgreSQL, and the
 * in-memory fake provider, whose books say what money really moved.
 */

let db: TestDatabase;
let server: RunningServer;
let client: ChargeClient;
const provider = createFakeProvider();
const slept: number[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const engine = createChargeEngine({ pool: db.pgPool, provider });
  const handler = createChargeHandler(engine, {
    authenticate: (req) => (req.headers.authorization === 'Bearer tok_m' ? 'm_movements' : null),
    onError: () => {},
  });
  server = await listen((req, res) => void handler(req, res));
  client = createChargeClient({
    baseUrl: server.url,
    headers: { authorization: 'Bearer tok_m' },
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
  });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

const order = { customerId: 'c_m', amountMinor: 2000, currency: 'NGN' };

/** Charges through the client: chargeonce's id of the charge, and the provider's. */
async function charged(request: object = order) {
  const result = await client.charge({ ...order, ...request });
  expect(result.status).toBe(201);
  return JSON.parse(result.body) as { id: string; providerChargeId: string };
}

const providerRefundsOf = (body: string) =>
  provider
    .refundLedger()
    .filter((r) => r.id === (JSON.parse(body) as { providerRefundId: string }).providerRefundId);

describe('client → handler → engine → provider: captures and refunds', () => {
  it('authorizes, captures part, refunds part; a refund past the capture is refused and replayed', async () => {
    const { id, providerChargeId } = await charged({ capture: false });

    const captured = await client.capture(id, { amountMinor: 1500 });
    const refunded = await client.refund(id, { amountMinor: 1000, reason: 'requested' });
    const replay = await client.refund(
      id,
      { amountMinor: 1000, reason: 'requested' },
      {
        key: refunded.key,
      },
    );
    const over = await client.refund(id, { amountMinor: 501 }).catch((e: unknown) => e);
    const overAgain = await client
      .refund(id, { amountMinor: 501 }, { key: (over as ChargeClientError).key })
      .catch((e: unknown) => e);
    const rest = await client.refund(id, { amountMinor: 500 });

    expect(captured).toMatchObject({ status: 201, replayed: false });
    expect(JSON.parse(captured.body)).toMatchObject({
      object: 'capture',
      chargeId: id,
      status: 'succeeded',
      amountMinor: 1500,
    });
    expect(refunded).toMatchObject({ status: 201, replayed: false });
    expect(JSON.parse(refunded.body)).toMatchObject({
      object: 'refund',
      chargeId: id,
      amountMinor: 1000,
      reason: 'requested',
    });
    expect(replay).toMatchObject({ status: 201, replayed: true, body: refunded.body });
    expect(over).toBeInstanceOf(ChargeClientError);
    expect(over).toMatchObject({ code: 'charge_refused', operation: 'refund', httpStatus: 422 });
    expect(JSON.parse((over as ChargeClientError).response?.body ?? '{}')).toMatchObject({
      status: 'refused',
      refusal: 'exceeds_refundable',
    });
    expect((overAgain as ChargeClientError).response?.body).toBe(
      (over as ChargeClientError).response?.body,
    );
    expect((overAgain as ChargeClientError).response?.headers.get('idempotent-replayed')).toBe(
      'true',
    );
    expect(rest.status).toBe(201);
    // The provider's books: one capture of 1500, refunds of 1000 and 500, each once.
    expect(
      provider.captureLedger().filter((c) => c.providerChargeId === providerChargeId),
    ).toMatchObject([{ status: 'succeeded', amountMinor: 1500 }]);
    expect(
      provider
        .refundLedger()
        .filter((r) => r.providerChargeId === providerChargeId)
        .map((r) => r.amountMinor)
        .sort((a, b) => a - b),
    ).toEqual([500, 1000]);
  });

  it('captures everything when no amount is sent; a second capture is refused', async () => {
    const { id } = await charged({ capture: false, amountMinor: 1200 });

    const captured = await client.capture(id);
    const second = await client.capture(id).catch((e: unknown) => e);

    expect(JSON.parse(captured.body)).toMatchObject({ status: 'succeeded', amountMinor: 1200 });
    expect(second).toMatchObject({ code: 'charge_refused', operation: 'capture', httpStatus: 422 });
  });

  it('retries a refund whose answer the provider lost, with the same key: refunded once', async () => {
    const { id } = await charged();
    provider.failNextRefund('failAfterRefund');
    const sleptBefore = slept.length;

    const refunded = await client.refund(id, { amountMinor: 300 });

    expect(refunded).toMatchObject({ status: 201, attempts: 2 });
    expect(slept.length - sleptBefore).toBe(1);
    expect(providerRefundsOf(refunded.body)).toHaveLength(1);
    expect(provider.refundsFor(providerRefundsOf(refunded.body)[0]?.providerKey ?? '')).toBe(1);
  });

  it('refuses to send a refund of no charge id at all', async () => {
    await expect(client.refund('', { amountMinor: 1 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });
});
