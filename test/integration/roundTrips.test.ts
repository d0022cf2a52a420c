import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { createChargeEngine, createEnginePool, type PoolInput } from '../../src/index.js';
import { createSlonikPool } from '../../src/store/createSlonikPool.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { startWireProxy } from '../support/wireProxy.js';
import { aKey, aRequest, readKey } from '../support/charges.js';

// Counts what crosses the wire, so the numbers are exact: a fresh charge is 2 round trips, each
// its own committed transaction; a replay is 1. The same on a node-postgres pool (prepared
// statements) and on a slonik pool.
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startWireProxy>>;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startWireProxy(db.url);
});
afterAll(async () => {
  await proxy.close();
  await db.drop();
});

type PoolKind = {
  name: string;
  open: (url: string) => Promise<{ pool: PoolInput; end: () => Promise<void> }>;
};

const POOLS: PoolKind[] = [
  {
    name: 'node-postgres pool',
    open: async (url) => {
      const pool = await createEnginePool(url, { maximumPoolSize: 1 });
      return { pool, end: () => pool.end() };
    },
  },
  {
    name: 'slonik pool',
    open: async (url) => {
      const pool = await createSlonikPool(url, { maximumPoolSize: 1 });
      // Connection set-up is not part of a charge.
      await pool.query(sql.unsafe`SELECT 1`);
      return { pool, end: () => pool.end() };
    },
  },
];

describe.each(POOLS)('database round trips on a $name', (kind) => {
  let pool: PoolInput;
  let end: () => Promise<void>;
  beforeAll(async () => {
    ({ pool, end } = await kind.open(proxy.url));
  });
  afterAll(async () => {
    await end();
  });

  it('a fresh charge: 2 round trips, each ending outside a transaction (2 commits)', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    await engine.processCharge(aKey(), aRequest()); // warms the engine up: prepares its statements
    const key = aKey();
    proxy.reset();

    await engine.processCharge(key, aRequest());

    expect(proxy.stats()).toMatchObject({ roundTrips: 2, endedIdle: 2, endedInTransaction: 0 });
    expect((await readKey(db.pool, db.tables, 'm_1', key))?.recovery_point).toBe('completed');
    await engine.close();
  });

  it('a decline costs the same as a success', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool, provider });
    await engine.processCharge(aKey(), aRequest());
    provider.failNext('decline');
    proxy.reset();

    const outcome = await engine.processCharge(aKey(), aRequest());

    expect(outcome.status).toBe('declined');
    expect(proxy.stats().roundTrips).toBe(2);
    await engine.close();
  });

  it('a replay: 1 round trip', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    proxy.reset();

    const replay = await engine.processCharge(key, aRequest());

    expect(replay.replayed).toBe(true);
    expect(proxy.stats()).toMatchObject({ roundTrips: 1, endedIdle: 1, endedInTransaction: 0 });
    await engine.close();
  });

  it('a refused reuse, with the fields it names, costs 1 round trip too', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    proxy.reset();

    const error: unknown = await engine
      .processCharge(key, aRequest({ amountMinor: 1 }))
      .catch((e: unknown) => e);

    expect(error).toMatchObject({
      code: 'idempotency_key_reused',
      differingFields: ['amountMinor'],
    });
    expect(proxy.stats().roundTrips).toBe(1);
    await engine.close();
  });

  it('a fresh refund: 2 round trips and 2 commits, as a charge; its replay 1', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const charged = await engine.processCharge(aKey(), aRequest({ amountMinor: 1000 }));
    const refund = { merchantId: 'm_1', chargeId: charged.chargeId, amountMinor: 300 };
    await engine.processRefund(aKey(), refund); // prepares the refund's statements
    const key = aKey();
    proxy.reset();

    const fresh = await engine.processRefund(key, refund);
    const freshStats = proxy.stats();
    proxy.reset();
    const replay = await engine.processRefund(key, refund);

    expect(fresh).toMatchObject({ status: 'succeeded', replayed: false });
    expect(freshStats).toMatchObject({ roundTrips: 2, endedIdle: 2, endedInTransaction: 0 });
    expect(replay.replayed).toBe(true);
    expect(proxy.stats()).toMatchObject({ roundTrips: 1, endedIdle: 1, endedInTransaction: 0 });
    await engine.close();
  });

  it('a fresh capture: 2 round trips and 2 commits', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const authorized = await engine.processCharge(aKey(), aRequest({ capture: false }));
    const other = await engine.processCharge(aKey(), aRequest({ capture: false }));
    await engine.processCapture(aKey(), { merchantId: 'm_1', chargeId: other.chargeId });
    proxy.reset();

    const captured = await engine.processCapture(aKey(), {
      merchantId: 'm_1',
      chargeId: authorized.chargeId,
    });

    expect(captured.status).toBe('succeeded');
    expect(proxy.stats()).toMatchObject({ roundTrips: 2, endedIdle: 2, endedInTransaction: 0 });
    await engine.close();
  });
});

describe('the hot statements on a node-postgres pool', () => {
  it('ask for their row description once per connection, not on every call', async () => {
    // One connection: the warm-up describes the statements on the very one measured after it.
    const pool = await createEnginePool(proxy.url, { maximumPoolSize: 1 });
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    const key = aKey();
    await engine.processCharge(key, aRequest()); // the statements' first use may describe them
    proxy.reset();

    const fresh = await engine.processCharge(aKey(), aRequest());
    const replay = await engine.processCharge(key, aRequest());

    expect(fresh.replayed).toBe(false);
    expect(replay.replayed).toBe(true);
    expect(proxy.stats()).toMatchObject({ roundTrips: 3, describes: 0 });
    await engine.close();
    await pool.end();
  });
});
