import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { DatabasePool } from 'slonik';
import { inject } from 'vitest';
import { createSlonikPool } from '../../src/store/createSlonikPool.js';
import type { PgPoolLike } from '../../src/store/pgPoolLike.js';
import { createEnginePool } from '../../src/store/resolvePool.js';
import { tablesIn, type Tables } from '../../src/store/tables.js';
import { adminQuery, dropDatabase, urlForDatabase } from './postgres.js';

export { urlForDatabase };

/** A database of its own for one test file, with a pool on it. */
export type TestDatabase = {
  url: string;
  name: string;
  /** A slonik pool, for a test's own SQL (and for engines that test the slonik path). */
  pool: DatabasePool;
  /** A node-postgres pool (`createEnginePool`): what engines run on unless a test says otherwise. */
  pgPool: PgPoolLike;
  /** chargeonce's tables in the default schema. */
  tables: Tables;
  /** Ends the pool and drops the database. Safe to call twice. */
  drop(): Promise<void>;
};

export type TestDatabaseOptions = { maximumPoolSize?: number };

/** A clone of the migrated template: the `chargeonce` schema is ready. */
export async function createTestDatabase(options?: TestDatabaseOptions): Promise<TestDatabase> {
  return createDatabaseFrom(inject('pgTemplateDb'), options);
}

/** A database with nothing in it, for tests of migrating from scratch. */
export async function createEmptyDatabase(options?: TestDatabaseOptions): Promise<TestDatabase> {
  return createDatabaseFrom('template0', options);
}

let counter = 0;

async function createDatabaseFrom(
  template: string,
  options: TestDatabaseOptions = {},
): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  // pid + counter keep names apart within a run; the random part across runs on a shared server.
  const name = `chargeonce_test_${process.pid}_${++counter}_${randomBytes(3).toString('hex')}`;
  await cloneDatabase(adminUrl, template, name);
  const url = urlForDatabase(adminUrl, name);
  let pool: DatabasePool;
  let pgPool: PgPoolLike;
  try {
    pool = await createSlonikPool(url, { maximumPoolSize: 5 });
    pgPool = await createEnginePool(url, { maximumPoolSize: options.maximumPoolSize ?? 20 });
  } catch (error) {
    await dropDatabase(adminUrl, name);
    throw error;
  }
  let dropped: Promise<void> | undefined;
  return {
    url,
    name,
    pool,
    pgPool,
    tables: tablesIn('chargeonce'),
    drop: () =>
      (dropped ??= (async () => {
        // A pool whose connection a test killed (pg_terminate_backend, a restart) may reject while
        // ending: slonik rethrows that connection's last query error. The database goes anyway.
        await pool.end().catch(() => undefined);
        // pg's end() waits for every checked-out client; after a test killed backends mid-
        // transaction one may never come back. The
        // database is dropped with FORCE either way, so wait a bounded time and say so.
        const ended = await Promise.race([
          pgPool.end().then(
            () => true,
            () => true,
          ),
          sleep(5_000).then(() => false),
        ]);
        if (!ended) console.warn(`test database ${name}: a pg client was not released`);
        await dropDatabase(adminUrl, name);
      })()),
  };
}

/**
 * PostgreSQL refuses to clone a template while anything is connected to it (SQLSTATE 55006), and a
 * backend that just disconnected can take a moment to go away: retry briefly.
 */
async function cloneDatabase(adminUrl: string, template: string, name: string): Promise<void> {
  const statement = `CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`;
  for (let attempt = 1; ; attempt++) {
    try {
      await adminQuery(adminUrl, statement);
      return;
    } catch (error) {
      const inUse = (error as { code?: unknown }).code === '55006';
      if (!inUse || attempt >= 50) throw error;
      await sleep(100);
    }
  }
}

/** The database's URL with a setting (`lock_timeout`, say) for every one of its sessions. */
export function withSessionSetting(url: string, name: string, value: string): string {
  const withOption = new URL(url);
  withOption.searchParams.set('options', `-c ${name}=${value}`);
  return withOption.toString();
}
