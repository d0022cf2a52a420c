import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  ProviderTransientError,
  ProviderUnavailableError,
  type ChargeEngine,
  type ChargeOutcome,
} from '../../src/index.js';
import {
  createHttpProvider,
  startFakeProviderServer,
  type FakeProviderServer,
  type FakeProviderServerOptions,
  type FakeServerLedgerEntry,
} from '../../src/testing/index.js';
import { aKey, aRequest, readCharges } from '../support/charges.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const servers: FakeProviderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** The engine on a real database, talking HTTP to a fake provider server of its own. */
async function setUp(
  serverOptions: FakeProviderServerOptions = {},
  engineOptions: { providerTimeoutMs?: number } = {},
): Promise<{ server: FakeProviderServer; engine: ChargeEngine }> {
  const server = await startFakeProviderServer(serverOptions);
  servers.push(server);
  const engine = createChargeEngine({
    pool: db.pgPool,
    provider: createHttpProvider({ baseUrl: server.url }),
    providerTimeoutMs: engineOptions.providerTimeoutMs ?? 2_000,
    leaseMs: 10_000,
  });
  return { server, engine };
}

async function unavailable(promise: Promise<unknown>): Promise<ProviderTransientError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderUnavailableError);
  const cause = (error as ProviderUnavailableError).cause;
  expect(cause).toBeInstanceOf(ProviderTransientError);
  return cause as ProviderTransientError;
}

/** The faults this run injects: every one must fire. */
const TRANSIENT_FAULTS = [
  'hang',
  'errorBeforeCharge',
  'errorAfterCharge',
  'resetAfterCharge',
  'tooManyRequests',
  'decline',
] as const;

describe('the engine over HTTP', () => {
  it('reset after charging, then a retry: one charge, adopted by the retry', async () => {
    const { server, engine } = await setUp();
    const key = aKey();
    server.failNext('resetAfterCharge');

    expect((await unavailable(engine.processCharge(key, aRequest()))).reason).toBe('reset');
    expect(server.ledger()).toHaveLength(1);

    const outcome = await engine.processCharge(key, aRequest());

    expect(outcome).toMatchObject({ status: 'succeeded', replayed: false });
    expect(outcome.providerChargeId).toBe(server.ledger()[0]?.id);
    expect(server.ledger()).toHaveLength(1);
    // Adopted through the lookup: the retry never POSTed.
    expect(server.stats().requests).toMatchObject({ createCharge: 1, findCharge: 1 });
  });

  it('a provider that forgets keys at once: the lookup alone prevents the double charge', async () => {
    const { server, engine } = await setUp({ idempotencyWindowMs: 0 });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_forgetful' });
    server.failNext('errorAfterCharge');

    expect((await unavailable(engine.processCharge(key, request))).reason).toBe('http_5xx');
    const outcome = await engine.processCharge(key, request);

    expect(server.ledger()).toHaveLength(1);
    expect(outcome.providerChargeId).toBe(server.ledger()[0]?.id);
    // The stakes: this provider would have charged again had the retry POSTed.
    const [charge] = await readCharges(db.pool, db.tables, 'm_forgetful');
    const provider = createHttpProvider({ baseUrl: server.url });
    await provider.createCharge(
      {
        providerKey: charge!.provider_key,
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c_42',
        amountMinor: 2000,
        currency: 'NGN',
      },
      { signal: AbortSignal.timeout(5_000) },
    );
    expect(server.ledger()).toHaveLength(2);
  });

  it('a hung provider: ProviderUnavailableError at providerTimeoutMs, and the retry succeeds', async () => {
    const { server, engine } = await setUp({}, { providerTimeoutMs: 300 });
    const key = aKey();
    server.failNext('hang');

    expect((await unavailable(engine.processCharge(key, aRequest()))).reason).toBe('timeout');
    const outcome = await engine.processCharge(key, aRequest());

    expect(outcome.status).toBe('succeeded');
    expect(server.ledger()).toEqual([expect.objectContaining({ id: outcome.providerChargeId })]);
    expect(server.stats().faults.hang).toBe(1);
  });
});

const storedKey = z.object({
  key: z.string(),
  recovery_point: z.string(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
});

describe('200 operations under every fault, retried until settled', () => {
  const OPERATIONS = 200;
  const CONCURRENCY = 8;
  const MAX_TRIES = 40;

  it.each([
    { name: 'a provider that dedupes', idempotencyWindowMs: Infinity },
    { name: 'a provider that forgets keys at once', idempotencyWindowMs: 0 },
  ])('$name: exactly one ledger charge per operation, matching its outcome', async (variant) => {
    const merchantId = `m_chaos_${variant.idempotencyWindowMs}`;
    const { server, engine } = await setUp(
      {
        seed: 20_240_601,
        idempotencyWindowMs: variant.idempotencyWindowMs,
        latencyMs: { min: 0, max: 5 },
        rates: {
          hang: 0.03,
          errorBeforeCharge: 0.06,
          errorAfterCharge: 0.06,
          resetAfterCharge: 0.06,
          tooManyRequests: 0.06,
          decline: 0.1,
        } satisfies Record<(typeof TRANSIENT_FAULTS)[number], number>,
      },
      { providerTimeoutMs: 250 },
    );
    const operations = Array.from({ length: OPERATIONS }, (_, i) => ({
      key: aKey(),
      request: aRequest({ merchantId, customerId: `c_${i}`, amountMinor: 100 + i }),
    }));

    const settle = async (op: (typeof operations)[number]): Promise<ChargeOutcome> => {
      for (let tries = 1; tries <= MAX_TRIES; tries++) {
        try {
          return await engine.processCharge(op.key, op.request);
        } catch (error) {
          const retryable =
            error instanceof ProviderUnavailableError || error instanceof IdempotencyKeyInUseError;
          if (!retryable) throw error;
        }
      }
      throw new Error(`operation ${op.key} not settled after ${MAX_TRIES} tries`);
    };
    const outcomes = new Map<string, ChargeOutcome>();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < operations.length) {
          const op = operations[next++]!;
          outcomes.set(op.key, await settle(op));
        }
      }),
    );

    // The reconciler's view: the ledger over HTTP, as a worker process would read it.
    const response = await fetch(`${server.url}/v1/ledger`);
    const { ledger } = (await response.json()) as { ledger: FakeServerLedgerEntry[] };
    const charges = new Map(
      (await readCharges(db.pool, db.tables, merchantId)).map((c) => [c.id, c]),
    );
    const stored = new Map(
      (
        await db.pool.any(sql.type(storedKey)`
          SELECT key, recovery_point, response_status, response_body
          FROM ${db.tables.keys} WHERE merchant_id = ${merchantId}`)
      ).map((row) => [row.key, row]),
    );
    expect(ledger).toHaveLength(OPERATIONS);
    for (const op of operations) {
      const outcome = outcomes.get(op.key)!;
      const local = charges.get(outcome.chargeId)!;
      const atProvider = ledger.filter((entry) => entry.providerKey === local.provider_key);
      expect(atProvider).toHaveLength(1);
      expect(atProvider[0]).toMatchObject({
        id: outcome.providerChargeId,
        status: outcome.status,
        amountMinor: op.request.amountMinor,
      });
      expect(local).toMatchObject({
        status: outcome.status,
        provider_charge_id: atProvider[0]!.id,
      });
      expect(stored.get(op.key)).toMatchObject({
        recovery_point: 'completed',
        response_status: outcome.status === 'succeeded' ? 201 : 402,
        response_body: outcome.body,
      });
    }
    // The run is worth something only if every fault it asked for happened. (Wrong amounts and
    // malformed answers park keys instead of settling them: the time-boundaries tests and the
    // chaos harness cover those.)
    const { faults } = server.stats();
    for (const fault of TRANSIENT_FAULTS) {
      expect(faults[fault], fault).toBeGreaterThan(0);
    }
  });
});
