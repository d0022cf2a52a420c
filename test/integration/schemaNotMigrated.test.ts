import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { createChargeEngine, migrate, SchemaNotMigratedError } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aKey, aRequest } from '../support/charges.js';
import {
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
} from '../support/testDatabase.js';

const databases: TestDatabase[] = [];
async function track(database: Promise<TestDatabase>): Promise<TestDatabase> {
  const created = await database;
  databases.push(created);
  return created;
}
afterAll(async () => {
  await Promise.all(databases.map((db) => db.drop()));
});

describe('an unmigrated schema', () => {
  let empty: TestDatabase;
  beforeAll(async () => {
    empty = await track(createEmptyDatabase());
  });

  it('a database never migrated: SchemaNotMigratedError naming the schema, cause kept', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: empty.pool, provider });

    const error = await engine.processCharge(aKey(), aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SchemaNotMigratedError);
    expect(error).toMatchObject({ code: 'schema_not_migrated', httpStatus: 500 });
    expect((error as SchemaNotMigratedError).schema).toBe('chargeonce');
    expect((error as Error).message).toContain('migrate');
    expect((error as Error).message).toContain('"chargeonce"');
    expect(['3F000', '42P01', '42883']).toContain(
      ((error as Error).cause as { code?: unknown }).code,
    );
    expect(provider.calls.createCharge).toBe(0);
    await expect(engine.sweep()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(engine.reap()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(engine.status()).rejects.toBeInstanceOf(SchemaNotMigratedError);
    await expect(engine.listStuck()).rejects.toBeInstanceOf(SchemaNotMigratedError);
  });

  it('a schema that exists without chargeonce in it, then works once migrated', async () => {
    const db = await track(createEmptyDatabase());
    await db.pool.query(sql.unsafe`CREATE SCHEMA payments`);
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      schema: 'payments',
    });

    const error = await engine.processCharge(aKey(), aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SchemaNotMigratedError);
    expect((error as SchemaNotMigratedError).schema).toBe('payments');
    await migrate(db.pool, { schema: 'payments' });
    await expect(engine.processCharge(aKey(), aRequest())).resolves.toMatchObject({
      status: 'succeeded',
    });
  });

  it('a schema one migration behind: SchemaNotMigratedError, not a raw missing column', async () => {
    const db = await track(createTestDatabase());
    // As migration 0012 finds it: the column it adds is not there yet.
    await db.pool.query(sql.unsafe`ALTER TABLE ${db.tables.keys} DROP COLUMN sweeps`);
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });

    const error = await engine.sweep().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SchemaNotMigratedError);
    expect(((error as Error).cause as { code?: unknown }).code).toBe('42703');
    expect((error as Error).message).toContain('migrate');
  });

  it("a hook's own missing table is its error, not chargeonce's", async () => {
    const db = await track(createTestDatabase());
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx) => {
          await tx.query(sql.unsafe`SELECT * FROM public.stock_reservations`);
        },
      },
    });

    const error = await engine.processCharge(aKey(), aRequest()).catch((e: unknown) => e);

    expect(error).not.toBeInstanceOf(SchemaNotMigratedError);
    expect(error).toMatchObject({ code: '42P01' });
  });

  it.each([
    ['a table named as one of chargeonce’s', 'SELECT * FROM public.charges'],
    ['a column named as one a later migration adds', "UPDATE orders SET failure_code = 'x'"],
    ['such a column, unqualified, in a SELECT', 'SELECT sweeps FROM orders'],
  ])("a hook's SQL missing %s is its own error, not chargeonce's", async (_name, text) => {
    const db = await track(createTestDatabase());
    await db.pool.query(sql.unsafe`CREATE TABLE public.orders (id int)`);
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: { reserve: async (tx) => void (await tx.query(text)) },
    });

    const error = await engine.processCharge(aKey(), aRequest()).catch((e: unknown) => e);

    expect(error).not.toBeInstanceOf(SchemaNotMigratedError);
    expect(['42P01', '42703']).toContain((error as { code?: unknown }).code);
  });
});
