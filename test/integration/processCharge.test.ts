import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, countRows, readCharges, readKey, waitFor } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function setup(options: { dedupe?: boolean } = {}) {
  const provider = createFakeProvider({ dedupe: options.dedupe ?? true });
  const engine = createChargeEngine({ pool: db.pgPool, provider });
  return { provider, engine };
}

describe('processCharge', () => {
  it('charges once and stores the outcome, the intent and the provider charge id', async () => {
    const { provider, engine } = setup();
    const key = aKey();
    const request = aRequest({ merchantId: 'm_fresh', metadata: { order: '4821' } });

    const outcome = await engine.processCharge(key, request);

    expect(outcome).toMatchObject({ status: 'succeeded', httpStatus: 201, replayed: false });
    expect(provider.ledger()).toHaveLength(1);
    expect(outcome.providerChargeId).toBe(provider.ledger()[0]?.id);
    expect(JSON.parse(outcome.body)).toMatchObject({
      id: outcome.chargeId,
      status: 'succeeded',
      amountMinor: 2000,
      currency: 'NGN',
      metadata: { order: '4821' },
    });
    const row = await readKey(db.pool, db.tables, 'm_fresh', key);
    expect(row).toMatchObject({
      recovery_point: 'completed',
      lock_token: null,
      response_status: 201,
      response_body: outcome.body,
      charge_id: outcome.chargeId,
    });
    const charges = await readCharges(db.pool, db.tables, 'm_fresh');
    expect(charges).toEqual([
      expect.objectContaining({
        id: outcome.chargeId,
        status: 'succeeded',
        provider_charge_id: outcome.providerChargeId,
        provider_key: provider.ledger()[0]?.providerKey,
      }),
    ]);
  });

  it('replays a completed key byte for byte without calling the provider', async () => {
    const { provider, engine } = setup();
    const key = aKey();
    const first = await engine.processCharge(key, aRequest());
    const callsAfterFirst = { ...provider.calls };

    const second = await engine.processCharge(key, aRequest());
    const third = await engine.processCharge(key, aRequest());

    expect(second.replayed).toBe(true);
    expect(second.body).toBe(first.body);
    expect(third.body).toBe(first.body);
    expect(second).toEqual({ ...first, replayed: true });
    expect(provider.calls).toEqual(callsAfterFirst);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('treats the same request with its fields in another order as the same request', async () => {
    const { provider, engine } = setup();
    const key = aKey();
    await engine.processCharge(key, aRequest({ metadata: { a: '1', b: '2' } }));
    const reordered = {
      metadata: { b: '2', a: '1' },
      currency: 'NGN',
      amountMinor: 2000,
      customerId: 'c_42',
      merchantId: 'm_1',
    };
    const replay = await engine.processCharge(key, reordered);
    expect(replay.replayed).toBe(true);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('refuses the same key with a different request after completion (422), changing nothing', async () => {
    const { provider, engine } = setup();
    const key = aKey();
    const first = await engine.processCharge(key, aRequest());

    await expect(engine.processCharge(key, aRequest({ amountMinor: 5000 }))).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    await expect(
      engine.processCharge(key, aRequest({ metadata: { other: 'yes' } })),
    ).rejects.toMatchObject({
      code: 'idempotency_key_reused',
      httpStatus: 422,
      differingFields: ['metadata'],
    });
    expect(provider.ledger()).toHaveLength(1);
    expect((await engine.processCharge(key, aRequest())).body).toBe(first.body);
  });

  it('a 422 names the fields that differ from the stored request, never their values', async () => {
    const { engine } = setup();
    const key = aKey();
    await engine.processCharge(
      key,
      aRequest({ description: 'Order 1', metadata: { order: '1', a: 'x' } }),
    );

    const refusal = await engine
      .processCharge(
        key,
        aRequest({
          amountMinor: 2001,
          description: 'Order 1',
          metadata: { order: '2', a: 'x', b: 'y' },
        }),
      )
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(IdempotencyKeyReusedError);
    const reused = refusal as IdempotencyKeyReusedError;
    expect(reused.differingFields).toEqual(['amountMinor', 'metadata.b', 'metadata.order']);
    expect(reused.message).not.toContain('2001');
    expect(reused.message).toContain('amountMinor');
  });

  it('refuses a different request while the key is still in progress (422, not 409)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const provider = createFakeProvider({ beforeAnswer: () => gate });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const running = engine.processCharge(key, aRequest());
    await waitFor(async () => (await readKey(db.pool, db.tables, 'm_1', key)) !== null);

    await expect(engine.processCharge(key, aRequest({ amountMinor: 1 }))).rejects.toBeInstanceOf(
      IdempotencyKeyReusedError,
    );
    await expect(engine.processCharge(key, aRequest())).rejects.toBeInstanceOf(
      IdempotencyKeyInUseError,
    );
    release();
    expect((await running).status).toBe('succeeded');
  });

  it('stores a decline as an outcome (402) and replays it', async () => {
    const { provider, engine } = setup();
    const key = aKey();
    provider.failNext('decline');

    const declined = await engine.processCharge(key, aRequest());
    const replay = await engine.processCharge(key, aRequest());

    expect(declined).toMatchObject({ status: 'declined', httpStatus: 402, replayed: false });
    expect(JSON.parse(declined.body)).toMatchObject({
      status: 'declined',
      declineCode: 'card_declined',
    });
    expect(replay).toEqual({ ...declined, replayed: true });
    expect(provider.calls.createCharge).toBe(1);
    expect((await readKey(db.pool, db.tables, 'm_1', key))?.response_status).toBe(402);
  });

  it('scopes keys per merchant and per operation', async () => {
    const provider = createFakeProvider();
    const charges = createChargeEngine({ pool: db.pgPool, provider });
    const payouts = createChargeEngine({ pool: db.pgPool, provider, operation: 'payout' });
    const key = aKey();

    const a = await charges.processCharge(key, aRequest({ merchantId: 'm_scope_a' }));
    const b = await charges.processCharge(
      key,
      aRequest({ merchantId: 'm_scope_b', amountMinor: 7 }),
    );
    const c = await payouts.processCharge(key, aRequest({ merchantId: 'm_scope_a' }));

    expect(new Set([a.chargeId, b.chargeId, c.chargeId]).size).toBe(3);
    expect([a.replayed, b.replayed, c.replayed]).toEqual([false, false, false]);
    expect(provider.ledger()).toHaveLength(3);
    expect(new Set(provider.ledger().map((e) => e.providerKey)).size).toBe(3);
  });

  it('writes to its own tables even when the session has temporary tables of the same names', async () => {
    const pool = await createEnginePool(db.url, { maximumPoolSize: 1 });
    await pool.query({
      text: 'CREATE TEMP TABLE idempotency_keys (LIKE chargeonce.idempotency_keys INCLUDING ALL)',
    });
    await pool.query({ text: 'CREATE TEMP TABLE charges (LIKE chargeonce.charges INCLUDING ALL)' });
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();

    await engine.processCharge(key, aRequest({ merchantId: 'm_temp' }));

    expect((await readKey(db.pool, db.tables, 'm_temp', key))?.recovery_point).toBe('completed');
    await pool.end();
  });

  it('counts keys and charges one for one', async () => {
    const before = await countRows(db.pool, db.tables.keys);
    const { engine } = setup();
    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_count' }));
    expect(await countRows(db.pool, db.tables.keys)).toBe(before + 1);
    expect(await readCharges(db.pool, db.tables, 'm_count')).toHaveLength(1);
  });
});

describe('createChargeEngine', () => {
  it('refuses a provider timeout that is not below the lease', () => {
    const provider = createFakeProvider();
    expect(() =>
      createChargeEngine({ pool: db.pgPool, provider, leaseMs: 1_000, providerTimeoutMs: 1_000 }),
    ).toThrow(InvalidConfigurationError);
    expect(() => createChargeEngine({ pool: db.pgPool, provider, leaseMs: 0 })).toThrow(
      InvalidConfigurationError,
    );
    expect(() => createChargeEngine({ pool: db.pgPool, provider, schema: 'Bad-Schema' })).toThrow(
      InvalidConfigurationError,
    );
    expect(() =>
      createChargeEngine({ pool: db.pgPool, provider, inProgress: { waitMs: -1 } }),
    ).toThrow(InvalidConfigurationError);
  });

  it('refuses missing options, a provider that is not one and a missing pool, at once', () => {
    type Options = Parameters<typeof createChargeEngine>[0];
    const make = (options: unknown) => () => createChargeEngine(options as Options);
    const provider = createFakeProvider();

    expect(make(undefined)).toThrow(InvalidConfigurationError);
    expect(make(null)).toThrow(InvalidConfigurationError);
    expect(make({ pool: db.pgPool })).toThrow(InvalidConfigurationError);
    expect(make({ pool: db.pgPool, provider: {} })).toThrow(/createCharge and findCharge/);
    expect(make({ pool: db.pgPool, provider: { createCharge: () => null } })).toThrow(
      InvalidConfigurationError,
    );
    expect(make({ provider })).toThrow(InvalidConfigurationError);
    expect(make({ pool: '', provider })).toThrow(InvalidConfigurationError);
    expect(make({ pool: 42, provider })).toThrow(InvalidConfigurationError);
    expect(make({ pool: db.pgPool, provider })).not.toThrow();
  });
});
