import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import {
  ChargeRejectedError,
  createChargeEngine,
  InvalidConfigurationError,
  StoreUnavailableError,
  type ChargeHooks,
  type HookTransaction,
} from '../../src/index.js';
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

describe('hooks are checked when the engine is made', () => {
  const hook = () => Promise.resolve();
  it.each([
    ['a complete hook that is a number', { complete: 42 }, 'hooks.complete must be a function'],
    ['a reserve hook that is a string', { reserve: 'x' }, 'hooks.reserve must be a function'],
    ['a cancel hook that is an object', { cancel: {} }, 'hooks.cancel must be a function'],
    [
      'a refund complete hook that is a number',
      { refund: { complete: 42 } },
      'hooks.refund.complete must be a function',
    ],
    [
      'a capture reserve hook that is a string',
      { capture: { reserve: 'x' } },
      'hooks.capture.reserve must be a function',
    ],
    ['refund hooks that are a function', { refund: hook }, 'hooks.refund must be an object'],
    ['hooks that are a number', 42, 'hooks must be an object'],
    ['a misspelt hook', { compete: hook }, 'hooks.compete is not a hook'],
    ['a misspelt refund hook', { refund: { reserv: hook } }, 'hooks.refund.reserv is not a hook'],
  ])('refuses %s, naming it, before any charge', (_name, hooks, message) => {
    const provider = createFakeProvider();
    let error: unknown = null;
    try {
      createChargeEngine({ pool: db.pgPool, provider, hooks: hooks as ChargeHooks });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect((error as Error).message).toContain(message);
    expect(provider.calls).toMatchObject({ createCharge: 0, findCharge: 0 });
  });

  it('takes every hook the engine runs, and hooks left out as undefined or null', async () => {
    const ran: string[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: () => Promise.resolve(void ran.push('reserve')),
        complete: () => Promise.resolve(void ran.push('complete')),
        cancel: undefined,
        refund: { reserve: hook, complete: hook, cancel: hook },
        capture: { complete: null } as never,
      },
    });
    await expect(engine.processCharge(aKey(), aRequest())).resolves.toMatchObject({
      status: 'succeeded',
    });
    expect(ran).toEqual(['reserve', 'complete']);
  });
});

describe('a hook query takes the statements query builders make', () => {
  it("runs Kysely's compiled query (values in `parameters`) and sql-template-strings' (`text` beside a `?` `sql`)", async () => {
    const sums: unknown[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx) => {
          // What sql`select ${41}::int + 1 as n`.compile(kysely) gives.
          const kysely = { sql: 'select $1::int + 1 as n', parameters: [41], query: {} };
          sums.push((await tx.query(kysely)).rows[0]?.n);
          // What SQL`select ${41}::int + 2 as n` of sql-template-strings gives (getters both).
          const templated = {
            text: 'select $1::int + 2 as n',
            sql: 'select ?::int + 2 as n',
            values: [41],
          };
          sums.push((await tx.query(templated)).rows[0]?.n);
        },
      },
    });

    await engine.processCharge(aKey(), aRequest());
    expect(sums).toEqual([42, 43]);
  });

  it("runs Knex's toSQL().toNative() and Drizzle's toSQL() with their values, in the phase", async () => {
    const returned: unknown[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx, ctx) => {
          // What knex('orders').insert({...}).returning('state').toSQL().toNative() gives on pg.
          const knexNative: { sql: string; bindings: readonly (string | number)[] } = {
            sql: 'insert into "orders" ("charge_id", "key", "state") values ($1::uuid, $2, $3) returning "state"',
            bindings: [ctx.chargeId, ctx.key, 'held'],
          };
          const inserted = await tx.query(knexNative);
          returned.push(...inserted.rows);
        },
        complete: async (tx, ctx) => {
          // What db.update(orders).set({ state }).where(eq(orders.key, key)).toSQL() gives.
          const drizzleQuery: { sql: string; params: unknown[]; typings?: string[] } = {
            sql: 'update "orders" set "state" = $1 where "orders"."key" = $2',
            params: [ctx.status, ctx.key],
            typings: ['none', 'none'],
          };
          const updated = await tx.query(drizzleQuery);
          returned.push(updated.rowCount);
        },
      },
    });
    const key = aKey();

    const outcome = await engine.processCharge(key, aRequest());

    expect(outcome.status).toBe('succeeded');
    expect(returned).toEqual([{ state: 'held' }, 1]);
    expect(await orderState(db.pool, key)).toBe('succeeded');
  });

  it.each([
    ['no sql or text', { query: 'SELECT 1' }, 'neither `sql` nor `text`'],
    ['sql that is not a string', { sql: 42 }, '`sql` is 42, not a string'],
    [
      'bindings that are not an array',
      { sql: 'SELECT $1', bindings: 'x' },
      '`bindings` is a string',
    ],
    [
      'params that are not an array',
      { sql: 'SELECT $1', params: { 0: 1 } },
      '`params` is an object',
    ],
    ['values that are not an array', { text: 'SELECT $1', values: 7 }, '`values` is 7'],
    [
      'values under two names',
      { sql: 'SELECT $1', values: [1], params: [1] },
      'both `values` and `params`',
    ],
    [
      "node-postgres's rowMode: 'array'",
      { text: 'SELECT $1::int AS n', values: [1], rowMode: 'array' },
      'rows come as objects',
    ],
    [
      "node-postgres's own type parsers",
      { text: 'SELECT $1::int AS n', values: [1], types: { getTypeParser: () => String } },
      'values come parsed as chargeonce parses them',
    ],
    [
      "Knex's toSQL() without toNative()",
      { sql: 'select ?', bindings: [1], toNative: () => ({ sql: 'select $1', bindings: [1] }) },
      'toSQL().toNative()',
    ],
  ])(
    'refuses a statement with %s at once, not as a 503, and rolls the phase back',
    async (_name, statement, message) => {
      const provider = createFakeProvider();
      const engine = createChargeEngine({
        pool: db.pgPool,
        provider,
        hooks: {
          reserve: async (tx, ctx) => {
            await writingHooks.reserve?.(tx, ctx);
            await tx.query(statement as never);
          },
        },
      });
      const key = aKey();

      const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(InvalidConfigurationError);
      expect(error).not.toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ code: 'invalid_configuration' });
      expect((error as Error).message).toContain(message);
      expect(await orderState(db.pool, key)).toBeNull();
      expect(await readKey(db.pool, db.tables, 'm_1', key)).toBeNull();
      expect(provider.calls.createCharge).toBe(0);
    },
  );

  it.each([
    [
      'text with values that are not an array',
      (tx: HookTransaction) => tx.query('SELECT $1::int', 7 as never),
    ],
    [
      'a statement object and values besides',
      (tx: HookTransaction) =>
        (tx.query as (s: unknown, v: unknown) => Promise<unknown>)({ text: 'SELECT $1::int' }, [7]),
    ],
  ])('refuses %s', async (_name, query) => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: { reserve: async (tx) => void (await query(tx)) },
    });
    await expect(engine.processCharge(aKey(), aRequest())).rejects.toBeInstanceOf(
      InvalidConfigurationError,
    );
  });
});

describe('a hook statement is sent as written', () => {
  it('keeps text that looks like the SQL layer’s own placeholders ($slonik_1) in a literal', async () => {
    const returned: unknown[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx) => {
          const { rows } = await tx.query(
            "SELECT '$slonik_1 and $$slonik_slonik_'::text AS literal, $1::text AS v",
            ['one'],
          );
          returned.push(rows[0]);
        },
      },
    });

    await engine.processCharge(aKey(), aRequest());
    expect(returned).toEqual([{ literal: '$slonik_1 and $$slonik_slonik_', v: 'one' }]);
  });
});

describe('a hook statement PostgreSQL refuses', () => {
  it('sent with fewer values than it has placeholders: the hook’s error, not an outage to retry', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: { reserve: async (tx) => void (await tx.query('SELECT $1::int')) },
    });
    const key = aKey();
    const error = await engine.processCharge(key, aRequest()).catch((e: unknown) => e);

    expect(error).not.toBeInstanceOf(StoreUnavailableError);
    expect(String(error)).toMatch(/bind message supplies 0 parameters/);
  });
});
