import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  InvalidConfigurationError,
  migrate,
  type ChargeHooks,
  type PoolInput,
} from '../../src/index.js';
import { createSlonikPool } from '../../src/store/createSlonikPool.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

// One engine API, three ways to PostgreSQL: a pool of the caller's own from node-postgres, one
// from slonik, or a connection string. Each migrates, charges, replays and runs hooks written
// three ways (text and values, a node-postgres config, a slonik token) in the phase transaction.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`
    CREATE TABLE orders (key text PRIMARY KEY, state text NOT NULL, amount bigint NOT NULL)`);
});
afterAll(async () => {
  await db.drop();
});

const orderRow = z.object({ state: z.string(), amount: z.number() });
const readOrder = (key: string) =>
  db.pool.maybeOne(
    sql.type(orderRow)`SELECT state, amount::float8 AS amount FROM orders WHERE key = ${key}`,
  );

/** Hooks that use each statement shape a driver-neutral transaction takes. */
function hooksOfEveryShape(seen: { reserveRows: unknown[] }): ChargeHooks {
  return {
    reserve: async (tx, ctx) => {
      const inserted = await tx.query(
        'INSERT INTO orders (key, state, amount) VALUES ($1, $2, $3) RETURNING amount',
        [ctx.key, 'held', ctx.request.amountMinor],
      );
      seen.reserveRows = inserted.rows;
      expect(inserted.rowCount).toBe(1);
    },
    complete: async (tx, ctx) => {
      await tx.query({
        text: 'UPDATE orders SET state = $1 WHERE key = $2',
        values: ['x', ctx.key],
      });
      await tx.query(sql.unsafe`UPDATE orders SET state = ${ctx.status} WHERE key = ${ctx.key}`);
    },
  };
}

type Input = { name: string; open: () => Promise<{ pool: PoolInput; end: () => Promise<void> }> };

const INPUTS: Input[] = [
  {
    name: 'a pg.Pool of the caller',
    open: () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 3 });
      return Promise.resolve({ pool, end: () => pool.end() });
    },
  },
  {
    name: 'a slonik pool of the caller',
    open: async () => {
      const pool = await createSlonikPool(db.url, { maximumPoolSize: 3 });
      return { pool, end: () => pool.end() };
    },
  },
  {
    name: 'a connection string',
    open: () => Promise.resolve({ pool: db.url, end: () => Promise.resolve() }),
  },
];

describe.each(INPUTS)('the engine on $name', (input) => {
  it('migrates, charges once, replays, and runs hooks of every statement shape', async () => {
    const { pool, end } = await input.open();
    const schema = `pools_${INPUTS.indexOf(input)}`;
    const seen = { reserveRows: [] as unknown[] };
    try {
      expect((await migrate(pool, { schema })).currentVersion).toBeGreaterThanOrEqual(3);
      const engine = createChargeEngine({
        pool,
        schema,
        provider: createFakeProvider(),
        hooks: hooksOfEveryShape(seen),
      });
      const key = aKey();

      const first = await engine.processCharge(key, aRequest({ amountMinor: 4200 }));
      const again = await engine.processCharge(key, aRequest({ amountMinor: 4200 }));

      expect(first).toMatchObject({ status: 'succeeded', replayed: false });
      expect(again).toMatchObject({ replayed: true, body: first.body });
      expect(await readOrder(key)).toEqual({ state: 'succeeded', amount: 4200 });
      // The hook's rows come parsed as chargeonce's SQL layer parses them: int8 as a BigInt.
      expect(seen.reserveRows).toEqual([{ amount: 4200n }]);
      await engine.close();
    } finally {
      await end();
    }
  });
});

describe('a pool of the caller stays the caller’s', () => {
  it('close() hands back every borrowed connection and leaves the pg.Pool open', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    try {
      const engine = createChargeEngine({
        pool,
        provider: createFakeProvider(),
        hooks: hooksOfEveryShape({ reserveRows: [] }),
      });
      await Promise.all([1, 2, 3].map(() => engine.processCharge(aKey(), aRequest())));

      await engine.close();

      expect(pool.totalCount - pool.idleCount).toBe(0);
      expect((await pool.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('an engine made from a connection string ends its own pool on close()', async () => {
    const engine = createChargeEngine({ pool: db.url, provider: createFakeProvider() });
    await engine.processCharge(aKey(), aRequest());

    await engine.close();

    await expect(engine.status()).rejects.toBeInstanceOf(InvalidConfigurationError);
  });
});

describe('refusals before any I/O', () => {
  it.each([
    ['an empty string', ''],
    ['a number', 42],
    ['an object that is no pool', { query: 'nope' }],
  ])('refuses %s as the pool', (_, pool) => {
    expect(() =>
      createChargeEngine({ pool: pool as PoolInput, provider: createFakeProvider() }),
    ).toThrow(InvalidConfigurationError);
  });

  it.each([
    ['a word', 'hello'],
    ['a MySQL URL', 'mysql://u:secret@127.0.0.1:1/x'],
    ['a host and port', '127.0.0.1:5432'],
  ])('refuses %s as the pool when the engine is made, naming the pool option', (_, pool) => {
    const error = (() => {
      try {
        createChargeEngine({ pool, provider: createFakeProvider() });
      } catch (e) {
        return e;
      }
      return null;
    })();

    expect(error).toBeInstanceOf(InvalidConfigurationError);
    const message = (error as Error).message;
    expect(message).toMatch(/^pool\b/);
    expect(message).toContain('postgres://');
    expect(message).not.toContain('createEnginePool');
    // A connection string may hold a password: never repeated.
    expect(message).not.toContain('secret');
    expect(message).not.toContain(pool);
  });

  it.each([
    ['postgres://', 'postgres://u:p@127.0.0.1:1/x'],
    ['postgresql://', 'postgresql://127.0.0.1/x?sslmode=disable'],
  ])('takes a %s connection string without connecting until the first call', async (_, pool) => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider() });
    await engine.close();
  });

  it('a hook query that is neither text nor a statement object is a typed error, and rolls back', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx) => {
          await tx.query({ nope: true } as never);
        },
      },
    });
    const key = aKey();

    await expect(engine.processCharge(key, aRequest())).rejects.toBeInstanceOf(
      InvalidConfigurationError,
    );
    expect(await readOrder(key)).toBeNull();
  });
});
