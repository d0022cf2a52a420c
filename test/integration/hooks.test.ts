import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import { ChargeRejectedError, createChargeEngine, type ChargeHooks } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, countRows, readCharges, readKey } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  // The caller's own table, written by the hooks.
  await db.pool.query(sql.unsafe`
    CREATE TABLE orders (key text PRIMARY KEY, state text NOT NULL, charge_id uuid)`);
});
afterAll(async () => {
  await db.drop();
});

async function orderState(pool: DatabasePool, key: string): Promise<string | null> {
  return pool.maybeOneFirst(
    sql.type(z.object({ state: z.string() }))`SELECT state FROM orders WHERE key = ${key}`,
  );
}

const writingHooks: ChargeHooks = {
  reserve: async (tx, ctx) => {
    await tx.query(sql.unsafe`
      INSERT INTO orders (key, state, charge_id) VALUES (${ctx.key}, 'held', ${ctx.chargeId}::uuid)`);
  },
  complete: async (tx, ctx) => {
    await tx.query(sql.unsafe`UPDATE orders SET state = ${ctx.status} WHERE key = ${ctx.key}`);
  },
};

describe('hooks run inside the phase transactions', () => {
  it('reserve and complete hooks commit with their phases', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: writingHooks,
    });
    const key = aKey();
    const outcome = await engine.processCharge(key, aRequest());
    expect(outcome.status).toBe('succeeded');
    expect(await orderState(db.pool, key)).toBe('succeeded');
  });

  it('a reserve hook that throws rolls back the claim and the intent: the key stays usable', async () => {
    const provider = createFakeProvider();
    const failing = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        reserve: async (tx, ctx) => {
          await writingHooks.reserve?.(tx, ctx);
          throw new Error('inventory service down');
        },
      },
    });
    const key = aKey();
    const keysBefore = await countRows(db.pool, db.tables.keys);
    const chargesBefore = await countRows(db.pool, db.tables.charges);

    await expect(failing.processCharge(key, aRequest())).rejects.toThrow('inventory service down');

    expect(await readKey(db.pool, db.tables, 'm_1', key)).toBeNull();
    expect(await orderState(db.pool, key)).toBeNull();
    expect(await countRows(db.pool, db.tables.keys)).toBe(keysBefore);
    expect(await countRows(db.pool, db.tables.charges)).toBe(chargesBefore);
    expect(provider.calls.createCharge).toBe(0);
    const working = createChargeEngine({ pool: db.pgPool, provider, hooks: writingHooks });
    await expect(working.processCharge(key, aRequest())).resolves.toMatchObject({
      replayed: false,
    });
  });

  it('with separateClaim, a reserve hook that throws releases the key it claimed earlier', async () => {
    const provider = createFakeProvider();
    const failing = createChargeEngine({
      pool: db.pgPool,
      provider,
      separateClaim: true,
      hooks: {
        reserve: () => Promise.reject(new Error('inventory service down')),
      },
    });
    const key = aKey();

    await expect(failing.processCharge(key, aRequest())).rejects.toThrow('inventory service down');

    expect(await readKey(db.pool, db.tables, 'm_1', key)).toMatchObject({
      recovery_point: 'started',
      lock_token: null,
    });
    const working = createChargeEngine({ pool: db.pgPool, provider, hooks: writingHooks });
    await expect(working.processCharge(key, aRequest())).resolves.toMatchObject({
      status: 'succeeded',
    });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('ChargeRejectedError stores the rejection, undoes the hook writes, and never calls the provider', async () => {
    const provider = createFakeProvider();
    const body = '{"error":"out_of_stock","sku":"A-1"}';
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        reserve: async (tx, ctx) => {
          await writingHooks.reserve?.(tx, ctx);
          throw new ChargeRejectedError(409, body);
        },
      },
    });
    const key = aKey();

    const rejected = await engine.processCharge(key, aRequest({ merchantId: 'm_reject' }));
    const replay = await engine.processCharge(key, aRequest({ merchantId: 'm_reject' }));

    expect(rejected).toMatchObject({ status: 'rejected', httpStatus: 409, body, replayed: false });
    expect(replay).toEqual({ ...rejected, replayed: true });
    expect(await orderState(db.pool, key)).toBeNull();
    expect(provider.calls).toMatchObject({ createCharge: 0, findCharge: 0 });
    expect(await readCharges(db.pool, db.tables, 'm_reject')).toEqual([
      expect.objectContaining({ status: 'rejected', provider_charge_id: null }),
    ]);
  });

  it('a complete hook that throws rolls back the completion; the retry adopts and completes', async () => {
    const provider = createFakeProvider({ dedupe: false });
    let failOnce = true;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        reserve: writingHooks.reserve,
        complete: async (tx, ctx) => {
          await writingHooks.complete?.(tx, ctx);
          if (failOnce) {
            failOnce = false;
            throw new Error('ledger service down');
          }
        },
      },
    });
    const key = aKey();

    await expect(engine.processCharge(key, aRequest())).rejects.toThrow('ledger service down');
    expect(await orderState(db.pool, key)).toBe('held');
    expect(await readKey(db.pool, db.tables, 'm_1', key)).toMatchObject({
      recovery_point: 'reserved',
      lock_token: null,
    });

    const outcome = await engine.processCharge(key, aRequest());
    expect(outcome.status).toBe('succeeded');
    expect(await orderState(db.pool, key)).toBe('succeeded');
    expect(provider.ledger()).toHaveLength(1);
  });

  it('the complete hook is told when the charge was adopted', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const adopted: boolean[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        complete: (_tx, ctx) => {
          adopted.push(ctx.adopted);
          return Promise.resolve();
        },
      },
    });
    const key = aKey();
    provider.failNext('failAfterCharge');
    await engine.processCharge(key, aRequest()).catch(() => null);
    await engine.processCharge(key, aRequest());
    await engine.processCharge(aKey(), aRequest());
    expect(adopted).toEqual([true, false]);
  });
});
