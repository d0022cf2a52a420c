import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { prepared } from '../../src/store/hotStatements.js';
import { queryPrepared, runHotQuery, takesHotQueries } from '../../src/store/hotQuery.js';
import { watchedPool } from '../../src/store/watchedPool.js';
import type { PgPoolLike } from '../../src/store/pgPoolLike.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { startWireProxy, type WireProxy } from '../support/wireProxy.js';

// The hot statements' own way of running a prepared statement on node-postgres: the same rows as
// pg's query, errors that reject (never a hang), and a connection that stays usable after them.
let db: TestDatabase;
let proxy: WireProxy;
let pool: pg.Pool;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startWireProxy(db.url);
  pool = new pg.Pool({ connectionString: proxy.url, max: 1 });
});
afterAll(async () => {
  await pool.end();
  await proxy.close();
  await db.drop();
});

/** A statement of its own per test: the process-wide row description is learned afresh. */
const statement = (text: string) => prepared(`${text} -- ${Math.random()}`);

describe('runHotQuery', () => {
  it('returns the rows pg would, parsed alike: text, numbers, booleans, nulls, times, arrays', async () => {
    const s = statement(`SELECT $1::text AS t, $2::int4 AS i, $3::float8 AS f, $4::boolean AS b,
      NULL::text AS nothing, $5::timestamptz AS at, $6::text[] AS list, g AS n
      FROM generate_series(1, 3) g`);
    const values = [
      'a "quoted" \\ value',
      42,
      1.5,
      true,
      '2026-12-05T10:00:00Z',
      ['x', null, 'y"z'],
    ];

    const ours = await runHotQuery(pool, s, values);
    const theirs = await pool.query({ name: s.name, text: s.text, values });

    expect(ours).toEqual(theirs.rows);
    expect(ours[0]).toMatchObject({ i: 42, b: true, nothing: null, list: ['x', null, 'y"z'] });
    expect(ours[0]?.at).toBeInstanceOf(Date);
  });

  it('sends no Describe once the statement is described, and still reads its rows', async () => {
    const s = statement('SELECT $1::int4 + 1 AS n');
    await runHotQuery(pool, s, [1]);
    proxy.reset();

    const rows = await runHotQuery(pool, s, [41]);

    expect(rows).toEqual([{ n: 42 }]);
    expect(proxy.stats()).toMatchObject({ roundTrips: 1, describes: 0 });
  });

  it("rejects with PostgreSQL's error, and the connection answers the next query", async () => {
    const s = statement('SELECT $1::uuid AS id');

    const error: unknown = await runHotQuery(pool, s, ['not a uuid']).catch((e: unknown) => e);

    expect(error).toMatchObject({ code: '22P02' });
    expect(await runHotQuery(pool, s, ['00000000-0000-4000-8000-000000000000'])).toEqual([
      { id: '00000000-0000-4000-8000-000000000000' },
    ]);
  });

  it('rejects a value pg cannot send, writing nothing, and the connection stays usable', async () => {
    const s = statement('SELECT $1::jsonb AS doc');
    const circular: Record<string, unknown> = {};
    circular.self = circular;

    await expect(runHotQuery(pool, s, [circular])).rejects.toThrow();

    expect(await runHotQuery(pool, s, [{ a: 1 }])).toEqual([{ doc: { a: 1 } }]);
  });

  it('rejects when the server ends the connection mid-statement, instead of hanging', async () => {
    const own = new pg.Pool({ connectionString: db.url, max: 1 });
    own.on('error', () => {}); // the terminated connection's error, once idle
    const s = statement('SELECT pg_sleep(5) AS slept');
    const [{ pid }] = (await own.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [
      { pid: number },
    ];

    const running = runHotQuery(own, s, []).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await db.pgPool.query({ text: 'SELECT pg_terminate_backend($1)', values: [pid] });

    expect(await running).toBeInstanceOf(Error);
    await own.end();
  });

  it('reads the columns each connection has: a schema change is refused where it was prepared, read where it was not', async () => {
    await db.pgPool.query({ text: 'CREATE TABLE hot_shape (a int4)' });
    await db.pgPool.query({ text: 'INSERT INTO hot_shape VALUES (1)' });
    const s = statement('SELECT * FROM hot_shape');
    expect(await runHotQuery(pool, s, [])).toEqual([{ a: 1 }]);
    await db.pgPool.query({ text: "ALTER TABLE hot_shape ADD COLUMN b text DEFAULT 'two'" });
    const fresh = new pg.Pool({ connectionString: db.url, max: 1 });

    const prepared: unknown = await runHotQuery(pool, s, []).catch((e: unknown) => e);
    const unprepared = await runHotQuery(fresh, s, []);

    // PostgreSQL: "cached plan must not change result type", never rows read with old columns.
    expect(prepared).toMatchObject({ code: '0A000' });
    expect(unprepared).toEqual([{ a: 1, b: 'two' }]);
    await fresh.end();
  });
});

describe('queryPrepared', () => {
  const s = () => statement('SELECT $1::text AS t');
  it("runs as a submittable on pg 8.23's own pool, and alike on anything else", async () => {
    const wrapper: PgPoolLike = {
      connect: () => pool.connect(),
      query: (config) => pool.query(config),
      end: () => Promise.resolve(),
    };
    // A pool with a `query` of its own (a subclass's, say), which hands no callback on.
    const own = new pg.Pool({ connectionString: db.url, max: 1 });
    const poolQuery = own.query.bind(own);
    Object.assign(own, { query: (config: pg.QueryConfig) => poolQuery(config) });
    const pipelineOption = { pipeline: true };
    const pipelined = new pg.Pool({ connectionString: db.url, max: 1, ...pipelineOption });
    const anotherClient = new pg.Pool({
      connectionString: db.url,
      max: 1,
      Client: class extends pg.Client {},
    });
    const others: PgPoolLike[] = [wrapper, own, pipelined, anotherClient];

    expect(takesHotQueries(pool)).toBe(true);
    expect(others.map(takesHotQueries)).toEqual([false, false, false, false]);
    expect(await queryPrepared(pool, s(), ['p'])).toEqual([{ t: 'p' }]);
    for (const other of others)
      expect(await queryPrepared(other, s(), ['o'])).toEqual([{ t: 'o' }]);
    await Promise.all([own.end(), pipelined.end(), anotherClient.end()]);
  });

  it('a wrapper that hands submittables on, marked so, takes them as its pool does', async () => {
    const names: string[] = [];
    const forwarding = watchedPool(pool, (config) => names.push(config.name ?? ''));
    const statement1 = s();
    proxy.reset();

    expect(takesHotQueries(forwarding)).toBe(true);
    expect(await queryPrepared(forwarding, statement1, ['f'])).toEqual([{ t: 'f' }]);
    expect(await queryPrepared(forwarding, statement1, ['g'])).toEqual([{ t: 'g' }]);
    expect(names).toEqual([statement1.name, statement1.name]);
    expect(proxy.stats().describes).toBe(1);
  });
});

describe('a type parser that throws', () => {
  it('fails the query, as pg does, and the pool goes on', async () => {
    const numeric = 1700;
    const original = pg.types.getTypeParser(numeric, 'text') as (value: string) => unknown;
    pg.types.setTypeParser(numeric, () => {
      throw new Error('parser says no');
    });
    try {
      const failed: unknown = await runHotQuery(
        pool,
        statement('SELECT 1.5::numeric AS n'),
        [],
      ).catch((e: unknown) => e);
      expect(String(failed)).toContain('parser says no');
    } finally {
      pg.types.setTypeParser(numeric, original);
    }
    expect(await runHotQuery(pool, statement('SELECT 2.5::numeric AS n'), [])).toEqual([
      { n: '2.5' },
    ]);
  });
});
