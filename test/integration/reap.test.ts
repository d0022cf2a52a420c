import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  IdempotencyKeyExpiredError,
  IdempotencyKeyReusedError,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, readKey, seedAbandonedKeys } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
// Each test's engines record their own windows: those of earlier tests' engines (longer, in the
// same schema) would otherwise hold every key, as they are meant to.
beforeEach(async () => {
  await db.pool.query(sql.unsafe`DELETE FROM ${db.tables.retentionWindows}`);
});

const count = (merchantId: string, table: 'keys' | 'charges') =>
  db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${table === 'keys' ? db.tables.keys : db.tables.charges}
    WHERE merchant_id = ${merchantId}`);

/** A merchant's keys at one recovery point. */
const countAt = (merchantId: string, point: string) =>
  db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.keys}
    WHERE merchant_id = ${merchantId} AND recovery_point = ${point}`);

/** Marks a merchant's completed keys and tombstones as completed `hours` ago. */
const age = (merchantId: string, hours: number) =>
  db.pool.query(sql.unsafe`
    UPDATE ${db.tables.keys} SET completed_at = now() - ${hours}::float8 * interval '1 hour'
    WHERE merchant_id = ${merchantId} AND recovery_point IN ('completed', 'expired')`);

/** Writes `n` completed keys (and their charges) completed `hours` ago, in one statement. */
const seedCompleted = (merchantId: string, n: number, hours: number) =>
  db.pool.query(sql.unsafe`
    WITH ids AS (SELECT gen_random_uuid() AS id, i FROM generate_series(1, ${n}) AS i),
    keys AS (
      INSERT INTO ${db.tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, response_status, response_body, completed_at)
      SELECT ${merchantId}, 'charge', 'old-' || i, 'h', '{}', 'completed', id, 201, '{}',
        now() - ${hours}::float8 * interval '1 hour'
      FROM ids
    )
    INSERT INTO ${db.tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
      provider_key, status)
    SELECT ${merchantId}, id, 'c', 1, 'NGN', 'pk-' || i, 'succeeded' FROM ids`);

describe('reap', () => {
  it('reaps completed keys past retention into tombstones, keeps recent and unfinished ones, keeps charges', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      retentionMs: 24 * 3_600_000,
    });
    const oldKey = aKey();
    const recentKey = aKey();
    await engine.processCharge(oldKey, aRequest({ merchantId: 'm_reap_old' }));
    await engine.processCharge(recentKey, aRequest({ merchantId: 'm_reap_recent' }));
    await age('m_reap_old', 25);
    await seedAbandonedKeys(db.pool, db.tables, 5, aRequest({ merchantId: 'm_reap_unfinished' }));
    // Unfinished keys a week old are still never reaped.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = now() - interval '7 days'
      WHERE merchant_id = 'm_reap_unfinished'`);

    const reaped = await engine.reap();

    expect(reaped).toBe(1);
    // The stored response is gone; the scope, key and charge id stay as a tombstone.
    expect(await readKey(db.pool, db.tables, 'm_reap_old', oldKey)).toMatchObject({
      recovery_point: 'expired',
      response_status: null,
      response_body: null,
    });
    expect(await readKey(db.pool, db.tables, 'm_reap_recent', recentKey)).toMatchObject({
      recovery_point: 'completed',
    });
    expect(await count('m_reap_unfinished', 'keys')).toBe(5);
    expect(await count('m_reap_old', 'charges')).toBe(1);
  });

  it('respects limit and batch size', async () => {
    await seedCompleted('m_reap_limit', 25, 100);
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });

    expect(await engine.reap({ limit: 10, batchSize: 3 })).toBe(10);
    expect(await countAt('m_reap_limit', 'completed')).toBe(15);
    expect(await engine.reap({ limit: 100, batchSize: 4 })).toBe(15);
    expect(await engine.reap()).toBe(0);
  });

  it('reaps 50,000 old keys in batches while charges run and complete during it', async () => {
    await seedCompleted('m_reap_bulk', 50_000, 100);
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    let reaping = true;
    let completedDuringReap = 0;
    const charges: Array<Promise<unknown>> = [];

    const reaped = engine.reap({ limit: 100_000, batchSize: 1_000 }).finally(() => {
      reaping = false;
    });
    const charging = (async () => {
      while (reaping) {
        const run = engine.processCharge(aKey(), aRequest({ merchantId: 'm_reap_live' }));
        charges.push(run);
        await run;
        if (reaping) completedDuringReap += 1;
      }
    })();

    expect(await reaped).toBe(50_000);
    await charging;
    await Promise.all(charges);
    expect(completedDuringReap).toBeGreaterThan(0);
    expect(await countAt('m_reap_bulk', 'completed')).toBe(0);
    expect(await countAt('m_reap_bulk', 'expired')).toBe(50_000);
    expect(await count('m_reap_bulk', 'charges')).toBe(50_000);
    // The fresh keys were not touched by the reap.
    expect(await count('m_reap_live', 'keys')).toBe(charges.length);
    expect(provider.ledger()).toHaveLength(charges.length);
  });

  it('refuses a retry after the reaper instead of charging again, whatever the delay', async () => {
    // Before tombstones the reaper deleted the key, and this retry was a fresh claim with a new
    // provider key: a second charge that neither dedupe nor findCharge could see.
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider, retentionMs: 3_600_000 });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_reap_late' });
    const first = await engine.processCharge(key, request);
    await age('m_reap_late', 2);
    expect(await engine.reap()).toBe(1);

    const late = await engine.processCharge(key, request).catch((e: unknown) => e);

    expect(late).toBeInstanceOf(IdempotencyKeyExpiredError);
    expect(late).toMatchObject({ code: 'idempotency_key_expired', httpStatus: 410 });
    expect((late as IdempotencyKeyExpiredError).chargeId).toBe(first.chargeId);
    expect(provider.ledger()).toHaveLength(1);
    // A different request under the reaped key is still a reuse, as before the reaper.
    await expect(
      engine.processCharge(key, { ...request, amountMinor: request.amountMinor + 1 }),
    ).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
  });

  it('deletes tombstones past tombstoneRetentionMs, and only then is the key free again', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      retentionMs: 3_600_000,
      tombstoneRetentionMs: 10 * 3_600_000,
    });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_reap_purge' });
    await engine.processCharge(key, request);
    await age('m_reap_purge', 5);
    await engine.reap();
    expect(await countAt('m_reap_purge', 'expired')).toBe(1);
    await age('m_reap_purge', 9); // tombstone younger than its window: kept
    await engine.reap();
    expect(await countAt('m_reap_purge', 'expired')).toBe(1);
    await age('m_reap_purge', 11);

    // Other tests' tombstones in this database are older still: reap past them all.
    await engine.reap({ limit: 1_000_000, batchSize: 10_000 });

    expect(await count('m_reap_purge', 'keys')).toBe(0);
    expect(await count('m_reap_purge', 'charges')).toBe(1);
    // Forgotten: the key is a new operation now, as the retention contract says.
    expect((await engine.processCharge(key, request)).replayed).toBe(false);
  });

  it('refuses a tombstone window that does not exceed retention', () => {
    expect(() =>
      createChargeEngine({
        pool: db.pgPool,
        provider: createFakeProvider(),
        retentionMs: 3_600_000,
        tombstoneRetentionMs: 3_600_000,
      }),
    ).toThrow(/tombstoneRetentionMs/);
  });

  it("engines of other operations on the schema: one's reaper never reaps another's keys early", async () => {
    const provider = createFakeProvider();
    // The serving engine keeps keys 72 h (the default); another operation's keeps them 200 ms.
    const serving = createChargeEngine({ pool: db.pgPool, provider });
    const hasty = createChargeEngine({
      pool: db.pgPool,
      provider,
      operation: 'topup_hasty',
      retentionMs: 200,
      tombstoneRetentionMs: 400,
    });
    const merchantId = 'm_reap_windows';
    const key = aKey();
    const first = await serving.processCharge(key, aRequest({ merchantId }));
    await hasty.processCharge(aKey(), aRequest({ merchantId }));
    // Past the hasty engine's windows, both of them.
    await age(merchantId, 1 / 3600);

    await hasty.reap();
    await hasty.reap();
    const retried = await serving.processCharge(key, aRequest({ merchantId }));

    // Replayed: the serving engine's 72 h held against the other engine's reaper.
    expect(retried).toMatchObject({ replayed: true, chargeId: first.chargeId });
    expect(provider.ledger()).toHaveLength(2);
    await serving.close();
    await hasty.close();
  });

  it('a window once recorded is not lowered by an engine with shorter ones, only by hand', async () => {
    const provider = createFakeProvider();
    const operation = 'op_reap_lowered';
    const long = createChargeEngine({
      pool: db.pgPool,
      provider,
      operation,
      retentionMs: 30 * 24 * 3_600_000,
    });
    const merchantId = 'm_reap_lowered';
    const key = aKey();
    await long.processCharge(key, aRequest({ merchantId }));
    await age(merchantId, 96);
    // A one-off engine with the defaults (72 h) reaps the schema: the 30 days recorded hold.
    const oneOff = createChargeEngine({ pool: db.pgPool, provider, operation });
    await oneOff.reap();
    expect(await countAt(merchantId, 'completed')).toBe(1);

    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.retentionWindows} SET retention_ms = 72 * 3600000
      WHERE retention_ms > 72 * 3600000`);
    await oneOff.reap();
    expect(await countAt(merchantId, 'expired')).toBe(1);
    await long.close();
    await oneOff.close();
  });
});
