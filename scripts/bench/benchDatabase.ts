import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { migrate } from '../../src/index.js';
import { tablesIn } from '../../src/store/tables.js';
import { adminQuery, dropDatabase, urlForDatabase } from '../../test/support/postgres.js';
import { maybeBaseEngine } from './baseEngine.js';
import { BENCH_MERCHANT } from './benchRequest.js';
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
 * Empties every design's tables, then fills each with the same `baseline` completed
 * charges (keys, charges, stored responses) and analyzes them: each round starts from the same
 * state, on tables the size of a service that has been running, and the designs' tables grow
 * alike within it. On tables the planner believed empty or tiny, the statements' cached plans
 * chose scans that then ran against thousands of rows, and PostgreSQL CPU per call grew through
 * a round, by design and by luck.
 */
export async function emptyTables(pool: DatabasePool, baseline: number): Promise<void> {
  const tables = schemasInUse().map((schema) => tablesIn(schema));
  const all = tables.flatMap((t) => [t.keys, t.charges]);
  await pool.query(sql.unsafe`TRUNCATE ${sql.join(all, sql.fragment`, `)}`);
  for (const t of tables) await fillBaseline(pool, t, baseline);
  await pool.query(sql.unsafe`ANALYZE ${sql.join(all, sql.fragment`, `)}`);
}

/** The baseline's rows, as the engine writes them: a completed key and its succeeded charge. */
async function fillBaseline(
  pool: DatabasePool,
  t: ReturnType<typeof tablesIn>,
  baseline: number,
): Promise<void> {
  await pool.query(sql.unsafe`
    WITH keys AS (
      INSERT INTO ${t.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, response_status, response_body, completed_at)
      SELECT ${BENCH_MERCHANT}, 'charge', 'baseline-' || i,
        encode(sha256(convert_to(r.request, 'UTF8')), 'hex'), r.request, 'completed',
        gen_random_uuid(), 201, r.request, now()
      FROM generate_series(1, ${baseline}) AS i,
        LATERAL (SELECT format(
          '{"amountMinor":%s,"currency":"NGN","customerId":"c_%s","merchantId":"%s"}',
          1000 + i, i % 1000, ${BENCH_MERCHANT}::text) AS request) AS r
      RETURNING charge_id, request::json AS request
    )
    INSERT INTO ${t.charges} (merchant_id, id, customer_id, amount_minor, currency,
      provider_key, provider_charge_id, status)
    SELECT ${BENCH_MERCHANT}, charge_id, request->>'customerId',
      (request->>'amountMinor')::bigint, 'NGN', 'bl_' || charge_id, 'pch_bl_' || charge_id,
      'succeeded'
    FROM keys`);
}
