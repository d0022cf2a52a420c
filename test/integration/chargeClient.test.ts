import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChargeClientError,
  createChargeClient,
  type ChargeClientOptions,
} from '../../src/client/index.js';
import { createChargeEngine } from '../../src/index.js';
import { createChargeHandler } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, aKey, waitFor } from '../support/charges.js';
import { listen, type RunningServer } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
let server: RunningServer;
let engine: ReturnType<typeof createChargeEngine>;
const gate = aGate();
let holdNext = false;
const provider = createFakeProvider({
  dedupe: false,
  beforeAnswer: async () => {
    if (holdNext) {
      holdNext = false;
      await gate.wait();
    }
  },
});

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider });
  const handler = createChargeHandler(engine, {
    authenticate: (req) => (req.headers.authorization === 'Bearer tok_c' ? 'm_client' : null),
    onError: () => {},
  });
  server = await listen((req, res) => void handler(req, res));
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

const request = { customerId: 'c_1', amountMinor: 1500, currency: 'NGN' };

function client(options: Partial<ChargeClientOptions> = {}) {
  const slept: number[] = [];
  const charges = createChargeClient({
    baseUrl: server.url,
    headers: { authorization: 'Bearer tok_c' },
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
    ...options,
  });
  return { charges, slept };
}

describe('chargeClient against the handler', () => {
  it('charges, and a second call with the same key gets the replay', async () => {
    const { charges } = client();
    const first = await charges.charge(request);
    const again = await charges.charge(request, { key: first.key });

    expect(first).toMatchObject({ status: 201, replayed: false, attempts: 1 });
    expect(again).toMatchObject({ status: 201, replayed: true, body: first.body });
  });

  it.each([
    ['a comma', `${aKey()},b`],
    ['quotes', `"${aKey()}"`],
    ['a quote and a backslash', `${aKey()}\\"x`],
    ['edge spaces', ` ${aKey()} `],
  ])('sends a key with %s so that the server stores that very key', async (_, key) => {
    const { charges } = client();
    const first = await charges.charge(request, { key });
    const again = await charges.charge(request, { key });

    expect(first).toMatchObject({ key, status: 201, replayed: false });
    expect(again).toMatchObject({ status: 201, replayed: true, body: first.body });
    const stored = await engine.inspect({ merchantId: 'm_client', key });
    const { id } = JSON.parse(first.body) as { id: string };
    expect(id).toEqual(expect.any(String));
    expect(stored?.charge?.id).toBe(id);
  });

  it("waits out a 409's Retry-After, then gets the running attempt's outcome", async () => {
    const key = aKey();
    holdNext = true;
    const ledgerBefore = provider.ledger().length;
    const { charges: holder } = client();
    const running = holder.charge(request, { key });
    await waitFor(() => Promise.resolve(provider.calls.createCharge > 0 && !holdNext));

    const slept: number[] = [];
    const { charges: waiter } = client({
      sleep: async (ms) => {
        slept.push(ms);
        // While the client waits, the running attempt finishes.
        gate.open();
        await running;
      },
    });
    const result = await waiter.charge(request, { key });

    expect(slept).toHaveLength(1);
    // Retry-After: 1 (the engine's 50–1000 ms, rounded up), above the first backoff cap (250).
    expect(slept[0]).toBe(1_000);
    expect(result).toMatchObject({ status: 201, replayed: true, attempts: 2 });
    expect(result.body).toBe((await running).body);
    expect(provider.ledger().length - ledgerBefore).toBe(1);
  });

  it('gives up at once on 422 and on 401, with the key and the response', async () => {
    const { charges, slept } = client();
    const first = await charges.charge(request);

    const reused = await charges
      .charge({ ...request, amountMinor: 1 }, { key: first.key })
      .catch((e: unknown) => e);
    const { charges: anonymous } = client({ headers: {} });
    const refused = await anonymous.charge(request).catch((e: unknown) => e);

    expect(reused).toBeInstanceOf(ChargeClientError);
    expect(reused).toMatchObject({
      code: 'charge_refused',
      key: first.key,
      attempts: 1,
      httpStatus: 422,
    });
    expect(JSON.parse((reused as ChargeClientError).response?.body ?? '')).toMatchObject({
      error: { code: 'idempotency_key_reused' },
    });
    expect(refused).toMatchObject({ code: 'charge_refused', attempts: 1, httpStatus: 401 });
    expect(slept).toEqual([]);
  });

  it('resolves with a decline, which is stored and replayed', async () => {
    const { charges } = client();
    provider.failNext('decline');

    const declined = await charges.charge(request);
    const replay = await charges.charge(request, { key: declined.key });

    expect(declined).toMatchObject({ status: 402, replayed: false });
    expect(JSON.parse(declined.body)).toMatchObject({ status: 'declined' });
    expect(replay).toMatchObject({ status: 402, replayed: true, body: declined.body });
  });

  it('retries a 503 from the provider with the same key, and the retry adopts the charge', async () => {
    const { charges, slept } = client();
    const ledgerBefore = provider.ledger().length;
    provider.failNext('failAfterCharge');

    const result = await charges.charge(request);

    expect(result).toMatchObject({ status: 201, attempts: 2 });
    expect(slept).toEqual([1_000]);
    expect(provider.ledger().length - ledgerBefore).toBe(1);
    expect(JSON.parse(result.body)).toMatchObject({
      providerChargeId: provider.ledger().at(-1)?.id,
    });
  });
});
