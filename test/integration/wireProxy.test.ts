import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { createSlonikPool } from '../../src/store/createSlonikPool.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { startWireProxy, type WireProxy } from '../support/wireProxy.js';

const one = z.object({ n: z.number() });

let db: TestDatabase;
let proxy: WireProxy;
let pool: DatabasePool;

beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 1 });
  proxy = await startWireProxy(db.url);
  // One connection, so every statement below goes over the same, already started, session.
  pool = await createSlonikPool(proxy.url, { maximumPoolSize: 1 });
});

afterAll(async () => {
  await pool?.end();
  await proxy?.close();
  await db?.drop();
});

beforeEach(async () => {
  // Opens the connection, so its startup exchange is not part of what a test counts.
  await pool.query(sql.type(one)`SELECT 1 AS n`);
  proxy.reset();
});

describe('wire proxy', () => {
  it('counts one query outside a transaction as one round trip ending idle', async () => {
    await pool.query(sql.type(one)`SELECT 1 AS n`);
    expect(proxy.stats()).toMatchObject({ roundTrips: 1, endedIdle: 1, endedInTransaction: 0 });
  });

  it('counts START TRANSACTION, the query and COMMIT in a transaction', async () => {
    await pool.transaction(async (tx) => {
      await tx.query(sql.type(one)`SELECT 1 AS n`);
    });
    expect(proxy.stats()).toMatchObject({ roundTrips: 3, endedIdle: 1, endedInTransaction: 2 });
  });

  it('stays exact when messages span and share TCP chunks', async () => {
    // ~1 MB each way: bodies cross chunk boundaries and headers of 100k small rows get split.
    const big = 'x'.repeat(1 << 20);
    const rows = await pool.anyFirst(
      sql.type(one)`SELECT length(${big}) + g AS n FROM generate_series(1, 100000) g`,
    );
    expect(rows).toHaveLength(100_000);
    expect(proxy.stats()).toMatchObject({ roundTrips: 1, endedIdle: 1, endedInTransaction: 0 });
  });
});
