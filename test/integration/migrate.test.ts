import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { InvalidConfigurationError, SchemaVersionError } from '../../src/errors.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import {
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
} from '../support/testDatabase.js';

const regclass = z.object({ name: z.string().nullable() });
const versionRow = z.object({ version: z.number() });

/** The table's name if it exists (to_regclass is NULL otherwise). */
async function tableIn(pool: DatabasePool, schema: string, table: string): Promise<string | null> {
  return pool.oneFirst(
    sql.type(regclass)`SELECT to_regclass(${`${schema}.${table}`})::text AS name`,
  );
}

async function recordedVersions(pool: DatabasePool, schema: string): Promise<number[]> {
  const rows = await pool.anyFirst(
    sql.type(
      versionRow,
    )`SELECT version FROM ${sql.identifier([schema, 'schema_migrations'])} ORDER BY version`,
  );
  return [...rows];
}

let allVersions: number[];
const databases: TestDatabase[] = [];

async function track(database: Promise<TestDatabase>): Promise<TestDatabase> {
  const created = await database;
  databases.push(created);
  return created;
}

beforeAll(async () => {
  allVersions = (await loadMigrations()).map((m) => m.version);
});

afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()));
});

describe('migrate', () => {
  it('creates the tables on an empty database, then applies nothing the second time', async () => {
    const db = await track(createEmptyDatabase());
    expect(allVersions.length).toBeGreaterThan(0);

    const first = await migrate(db.url, { schema: 'chargeonce' });
    expect(first.applied).toEqual(allVersions);
    expect(first.currentVersion).toBe(allVersions.at(-1));
    expect(await tableIn(db.pool, 'chargeonce', 'idempotency_keys')).toBe(
      'chargeonce.idempotency_keys',
    );
    expect(await tableIn(db.pool, 'chargeonce', 'charges')).toBe('chargeonce.charges');

    const second = await migrate(db.pool, { schema: 'chargeonce' });
    expect(second).toEqual({ applied: [], currentVersion: allVersions.at(-1) });
    expect(await recordedVersions(db.pool, 'chargeonce')).toEqual(allVersions);
  });

  it('leaves a database cloned from the template already up to date', async () => {
    const db = await track(createTestDatabase());
    expect(await tableIn(db.pool, db.tables.schema, 'idempotency_keys')).not.toBeNull();
    expect(await migrate(db.pool)).toEqual({ applied: [], currentVersion: allVersions.at(-1) });
  });

  it('lets 8 concurrent migrators on an empty database all succeed, applying each version once', async () => {
    const db = await track(createEmptyDatabase());
    // Each call gets its own pool from the URL, as separate processes starting at once would.
    const results = await Promise.all(
      Array.from({ length: 8 }, () => migrate(db.url, { schema: 'chargeonce' })),
    );

    const applied = results.flatMap((result) => result.applied).sort((a, b) => a - b);
    expect(applied).toEqual(allVersions);
    for (const result of results) expect(result.currentVersion).toBe(allVersions.at(-1));
    expect(await recordedVersions(db.pool, 'chargeonce')).toEqual(allVersions);
  });

  it('refuses a schema migrated by a newer chargeonce, and writes nothing', async () => {
    const db = await track(createTestDatabase());
    const future = Math.max(...allVersions) + 1;
    const schema = 'from_the_future';
    await db.pool.query(sql.unsafe`CREATE SCHEMA ${sql.identifier([schema])}`);
    await db.pool.query(sql.unsafe`
      CREATE TABLE ${sql.identifier([schema, 'schema_migrations'])} (
        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    await db.pool.query(
      sql.unsafe`INSERT INTO ${sql.identifier([schema, 'schema_migrations'])} (version, name) VALUES (${future}, 'future')`,
    );

    await expect(migrate(db.pool, { schema })).rejects.toBeInstanceOf(SchemaVersionError);
    expect(await recordedVersions(db.pool, schema)).toEqual([future]);
    expect(await tableIn(db.pool, schema, 'idempotency_keys')).toBeNull();
    expect(await tableIn(db.pool, schema, 'charges')).toBeNull();
  });

  it('migrates into a custom schema, independently of the default one', async () => {
    const db = await track(createTestDatabase());
    const result = await migrate(db.pool, { schema: 'payments_x' });
    expect(result.applied).toEqual(allVersions);
    expect(await tableIn(db.pool, 'payments_x', 'idempotency_keys')).toBe(
      'payments_x.idempotency_keys',
    );
    expect(await tableIn(db.pool, 'payments_x', 'charges')).toBe('payments_x.charges');
    expect(await recordedVersions(db.pool, 'payments_x')).toEqual(allVersions);
    expect(await migrate(db.pool, { schema: 'payments_x' })).toEqual({
      applied: [],
      currentVersion: allVersions.at(-1),
    });
  });

  it('rejects an invalid schema name before touching the database', async () => {
    // Nothing listens on port 1: reaching the database would fail differently.
    const unreachable = 'postgres://nobody:nothing@127.0.0.1:1/nowhere';
    await expect(migrate(unreachable, { schema: 'Bad-Name' })).rejects.toBeInstanceOf(
      InvalidConfigurationError,
    );
  });
});
