import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { SchemaVersionError } from '../errors.js';
import { packageRoot } from '../packageRoot.js';
import { resolvePool, type PoolInput } from './resolvePool.js';
import { splitSqlStatements } from './splitSqlStatements.js';
import { tablesIn, DEFAULT_SCHEMA } from './tables.js';
import { withStore } from './storeErrors.js';

/** Where the numbered migration files live: `migrations/` at the package root. */
const migrationsDir = (): URL => pathToFileURL(join(packageRoot(), 'migrations') + '/');

/** One migration file. */
export type Migration = { version: number; name: string; statements: string[] };

/** Options for {@link migrate}. */
export type MigrateOptions = {
  /**
   * The schema that holds chargeonce's tables; created if missing.
   * @defaultValue `'chargeonce'`
   */
  schema?: string;
};

/** What {@link migrate} did. */
export type MigrateResult = { applied: number[]; currentVersion: number };

/** Reads `migrations/NNNN_name.sql`, in version order. */
export async function loadMigrations(): Promise<Migration[]> {
  const dir = migrationsDir();
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f));
  const migrations = await Promise.all(
    files.map(async (file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      statements: splitSqlStatements(await readFile(new URL(file, dir), 'utf8')),
    })),
  );
  return migrations.sort((a, b) => a.version - b.version);
}

const versionRow = z.object({ version: z.number().int() });

/**
 * Brings the schema up to the newest version this package knows, in one transaction.
 *
 * Safe when many processes run it at once: they queue on a transaction-scoped advisory lock, and
 * each one that gets it sees what the previous one committed. Idempotent.
 *
 * @throws {SchemaVersionError} when the database was migrated by a newer chargeonce.
 * @throws {StoreUnavailableError} when PostgreSQL cannot be reached.
 */
export async function migrate(
  input: PoolInput,
  options: MigrateOptions = {},
): Promise<MigrateResult> {
  const tables = tablesIn(options.schema ?? DEFAULT_SCHEMA);
  const migrations = await loadMigrations();
  const latest = migrations.at(-1)?.version ?? 0;
  const pools = await withStore(() => resolvePool(input));
  try {
    return await withStore(() =>
      pools.slonik.transaction(async (tx) => {
        // Serializes concurrent migrators of this schema until COMMIT. Taken before anything
        // else, so even CREATE SCHEMA IF NOT EXISTS never races.
        await tx.query(
          sql.unsafe`SELECT pg_advisory_xact_lock(hashtext('chargeonce.migrate'), hashtext(${tables.schema}))`,
        );
        await tx.query(sql.unsafe`CREATE SCHEMA IF NOT EXISTS ${sql.identifier([tables.schema])}`);
        await tx.query(sql.unsafe`
          CREATE TABLE IF NOT EXISTS ${tables.migrations} (
            version    integer     PRIMARY KEY,
            name       text        NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
          )`);
        const applied = new Set(
          await tx.anyFirst(sql.type(versionRow)`SELECT version FROM ${tables.migrations}`),
        );
        const newest = Math.max(0, ...applied);
        if (newest > latest) {
          throw new SchemaVersionError(
            `Schema ${tables.schema} is at version ${newest}, newer than this chargeonce knows (${latest}). Upgrade chargeonce.`,
          );
        }
        const done: number[] = [];
        for (const migration of migrations) {
          if (applied.has(migration.version)) continue;
          await applyMigration(tx, tables.schema, tables.migrations, migration);
          done.push(migration.version);
        }
        return { applied: done, currentVersion: Math.max(newest, ...done) };
      }),
    );
  } finally {
    await pools.end();
  }
}

async function applyMigration(
  tx: DatabaseTransactionConnection,
  schema: string,
  migrationsTable: ReturnType<typeof tablesIn>['migrations'],
  migration: Migration,
): Promise<void> {
  // The version is recorded first: if any statement fails, the whole transaction, record
  // included, rolls back.
  await tx.query(
    sql.unsafe`INSERT INTO ${migrationsTable} (version, name) VALUES (${migration.version}, ${migration.name})`,
  );
  // pg_temp last, explicitly: functions pin this path (SET search_path FROM CURRENT), and a
  // temporary table of a session must never stand in for one of ours.
  await tx.query(sql.unsafe`SELECT set_config('search_path', ${`${schema}, pg_temp`}, true)`);
  for (const statement of migration.statements) {
    await tx.query(sql.unsafe(rawSql(statement)));
  }
}

/** A template array holding one trusted statement from a migration file, for `sql.unsafe`. */
function rawSql(statement: string): TemplateStringsArray {
  // slonik checks for a frozen `raw`, as a real template literal has.
  return Object.freeze(Object.assign([statement], { raw: Object.freeze([statement]) }));
}
