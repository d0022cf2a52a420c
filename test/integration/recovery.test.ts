import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  ProviderError,
  ProviderUnavailableError,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, readCharges, readKey, seedInterruptedKey } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('resuming at each recovery point', () => {
  it('at started: reserves, then charges once', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_started' });
    const seeded = await seedInterruptedKey(db.pool, db.tables, key, request, 'started');

    const outcome = await engine.processCharge(key, request);

    expect(outcome).toMatchObject({
      status: 'succeeded',
      replayed: false,
      chargeId: seeded.chargeId,
    });
    // Nothing can have been charged before the intent existed: no lookup needed.
    expect(provider.calls).toMatchObject({ createCharge: 1, findCharge: 0 });
    expect(provider.chargesFor(seeded.providerKey)).toBe(1);
    expect(await readCharges(db.pool, db.tables, 'm_started')).toEqual([
      expect.objectContaining({ id: seeded.chargeId, status: 'succeeded' }),
    ]);
    expect((await readKey(db.pool, db.tables, 'm_started', key))?.attempts).toBe(2);
  });

  it('at reserved, the provider already charged: adopts it, charges nothing', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_adopt' });
    const seeded = await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');
    // The dead attempt's charge, made before it could record it.
    const made = await provider.createCharge(
      {
        providerKey: seeded.providerKey,
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c_42',
        amountMinor: 2000,
        currency: 'NGN',
      },
      { signal: new AbortController().signal },
    );

    const outcome = await engine.processCharge(key, request);

    expect(outcome).toMatchObject({ status: 'succeeded', providerChargeId: made.id });
    expect(provider.calls).toMatchObject({ createCharge: 1, findCharge: 1 });
    expect(provider.chargesFor(seeded.providerKey)).toBe(1);
  });

  it('at reserved, the provider has nothing: charges once', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_reserved' });
    const seeded = await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');

    const outcome = await engine.processCharge(key, request);

    expect(outcome.status).toBe('succeeded');
    expect(provider.calls).toMatchObject({ createCharge: 1, findCharge: 1 });
    expect(provider.chargesFor(seeded.providerKey)).toBe(1);
  });

  it('at reserved with the lease still held: 409 with a retry delay, nothing called', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const running = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider({ beforeAnswer: () => new Promise(() => {}) }),
      providerTimeoutMs: 300,
      leaseMs: 60_000,
    });
    const first = running.processCharge(key, aRequest()).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 100));

    const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(error).toMatchObject({ code: 'idempotency_key_in_use', httpStatus: 409 });
    expect((error as IdempotencyKeyInUseError).retryAfterMs).toBeGreaterThanOrEqual(50);
    expect(provider.calls).toMatchObject({ createCharge: 0, findCharge: 0 });
    expect(await first).toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('provider failures', () => {
  it('a transient failure stores nothing, releases the claim, and the retry charges once', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    provider.failNext('failBeforeCharge');

    const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(error).toMatchObject({ code: 'provider_unavailable', httpStatus: 503 });
    expect(await readKey(db.pool, db.tables, 'm_1', key)).toMatchObject({
      recovery_point: 'reserved',
      lock_token: null,
      response_status: null,
      response_body: null,
    });
    const outcome = await engine.processCharge(key, aRequest());
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: false });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('charged, then the answer was lost: the retry adopts the charge (real charges counted)', async () => {
    // The provider does not dedupe: only the engine's lookup stands between us and a double charge.
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    provider.failNext('failAfterCharge');

    await expect(engine.processCharge(key, aRequest())).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
    expect(provider.ledger()).toHaveLength(1);

    const outcome = await engine.processCharge(key, aRequest());
    expect(outcome.providerChargeId).toBe(provider.ledger()[0]?.id);
    expect(provider.ledger()).toHaveLength(1);
    expect(provider.calls).toMatchObject({ createCharge: 1, findCharge: 1 });
  });

  it('after the provider forgot its idempotency keys, the lookup still prevents a double charge', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    provider.failNext('failAfterCharge');
    await engine.processCharge(key, aRequest()).catch(() => null);
    provider.forgetIdempotencyKeys();

    await engine.processCharge(key, aRequest());

    expect(provider.ledger()).toHaveLength(1);
  });

  it('a provider that hangs is cut off at providerTimeoutMs and the retry succeeds', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      providerTimeoutMs: 100,
      leaseMs: 5_000,
    });
    const key = aKey();
    provider.failNext('hang');

    const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailableError);

    await expect(engine.processCharge(key, aRequest())).resolves.toMatchObject({
      status: 'succeeded',
    });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('the lookup and the charge share one providerTimeoutMs budget', async () => {
    // Each call alone fits in the budget; both in a row do not. A resumed attempt must give up
    // rather than still be at the provider after providerTimeoutMs.
    const provider = createFakeProvider({
      dedupe: false,
      beforeAnswer: () => new Promise((resolve) => setTimeout(resolve, 300)),
    });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      providerTimeoutMs: 500,
      leaseMs: 5_000,
    });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_budget' });
    await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');

    const error = await engine.processCharge(key, request).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect(provider.calls).toMatchObject({ createCharge: 1, findCharge: 1 });
  });

  it('a provider that ignores the abort signal is still cut off', async () => {
    const provider = createFakeProvider({ beforeAnswer: () => new Promise(() => {}) });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      providerTimeoutMs: 100,
      leaseMs: 5_000,
    });
    await expect(engine.processCharge(aKey(), aRequest())).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
  });

  it('an adapter bug is a ProviderError; the claim is released', async () => {
    const provider = createFakeProvider();
    provider.createCharge = () => Promise.reject(new TypeError('adapter bug'));
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();

    const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).cause).toBeInstanceOf(TypeError);
    expect((await readKey(db.pool, db.tables, 'm_1', key))?.lock_token).toBeNull();
  });
});
