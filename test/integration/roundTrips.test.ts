import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type DatabasePool } from 'slonik';
import { createChargeEngine, createEnginePool } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { startWireProxy } from '../support/wireProxy.js';
import { aKey, aRequest, readKey } from '../support/charges.js';

// Counts what crosses the wire, so the numbers are exact: a fresh charge is 2 round trips, each
// its own committed transaction; a replay is 1.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startWireProxy>>;
let pool: DatabasePool;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startWireProxy(db.url);
  pool = await createEnginePool(proxy.url, { maximumPoolSize: 1 });
  await pool.query(sql.unsafe`SELECT 1`); // connection set-up is not part of a charge
});
afterAll(async () => {
  await pool.end();
  await proxy.close();
  await db.drop();
});

describe('database round trips', () => {
  it('a fresh charge: 2 round trips, each ending outside a transaction (2 commits)', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    proxy.reset();

    await engine.processCharge(key, aRequest());

    expect(proxy.stats()).toEqual({ roundTrips: 2, endedIdle: 2, endedInTransaction: 0 });
    expect((await readKey(db.pool, db.tables, 'm_1', key))?.recovery_point).toBe('completed');
  });

  it('a decline costs the same as a success', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool, provider });
    provider.failNext('decline');
    proxy.reset();

    await engine.processCharge(aKey(), aRequest());

    expect(proxy.stats().roundTrips).toBe(2);
  });

  it('a replay: 1 round trip', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    proxy.reset();

    const replay = await engine.processCharge(key, aRequest());

    expect(replay.replayed).toBe(true);
    expect(proxy.stats()).toEqual({ roundTrips: 1, endedIdle: 1, endedInTransaction: 0 });
  });

  it('a refused reuse and a 409 cost 1 round trip too', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    proxy.reset();

    await engine.processCharge(key, aRequest({ amountMinor: 1 })).catch(() => null);

    expect(proxy.stats().roundTrips).toBe(1);
  });
});
