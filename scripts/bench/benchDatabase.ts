import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { migrate } from '../../src/index.js';
import { tablesIn } from '../../src/store/tables.js';
import { adminQuery, dropDatabase, urlForDatabase } from '../../test/support/postgres.js';
import { maybeBaseEngine } from './baseEngine.js';
import { DESIGN_SCHEMAS } from './Design.js';

/** A database of the bench's own on the server, dropped at the end. */
export type BenchDatabase = { url: string; drop(): Promise<void> };

/**
 * Creates a throwaway database, so that the bench never truncates tables it did not make (a
 * `DATABASE_URL` may point at a server with real data on it).
 */
export async function createBenchDatabase(serverUrl: string): Promise<BenchDatabase> {
  const name = `chargeonce_bench_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  return { url: urlForDatabase(serverUrl, name), drop: () => dropDatabase(serverUrl, name) };
}

const BASE_SCHEMA = DESIGN_SCHEMAS['engine-base'];
const SCHEMAS = Object.values(DESIGN_SCHEMAS).filter((schema) => schema !== BASE_SCHEMA);

/** The schemas in use: the base engine's only with `--base`. */
function schemasInUse(): string[] {
  return maybeBaseEngine() ? [...SCHEMAS, BASE_SCHEMA] : SCHEMAS;
}

/**
 * The same migration in every design's schema: the designs write identical tables and indexes.
 * The base engine's schema gets the base's own migrations (the tables it was written for).
 */
export async function migrateSchemas(pool: DatabasePool): Promise<void> {
  for (const schema of SCHEMAS) await migrate(pool, { schema });
  const base = maybeBaseEngine();
  if (base) await base.module.migrate(pool, { schema: BASE_SCHEMA });
}

/**
 * Empties every design's tables, so each round starts from the same state and the designs' tables
 * grow alike within it. Not analyzed afterwards: TRUNCATE leaves a table's size unknown, as a
 * new table's is, and the planner then assumes it is not tiny. Analyzing the empty tables told
 * it they were, and the plans the statements cached then (sequential scans, the wrong index)
 * stayed until autovacuum analyzed them again: PostgreSQL CPU per call grew through a round.
 */
export async function emptyTables(pool: DatabasePool): Promise<void> {
  const tables = schemasInUse().flatMap((schema) => {
    const t = tablesIn(schema);
    return [t.keys, t.charges];
  });
  await pool.query(sql.unsafe`TRUNCATE ${sql.join(tables, sql.fragment`, `)}`);
}
