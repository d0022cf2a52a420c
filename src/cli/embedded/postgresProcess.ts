import { spawn, type ChildProcess } from 'node:child_process';
import type { UserIds } from './postgresUser.js';

/** How PostgreSQL's programs are run: as whom, and where their output goes. */
export type RunAs = { ids: UserIds | undefined; log: (text: string) => void };

const READY = 'database system is ready to accept connections';
/** How much of a program's output an error quotes. */
const TAIL_CHARS = 2_000;

/** A program started: its process, and the moment it got where it was going. */
export type Started = { child: ChildProcess; done: Promise<void> };

/**
 * Runs `initdb`: a new cluster in `dataDir` whose superuser `postgres` has the password in
 * `passwordFile`, UTF8 whatever the machine's locale, with no fsync (the data is thrown away).
 * `done` rejects, quoting initdb's output, when it fails.
 */
export function runInitdb(
  initdb: string,
  cluster: { dataDir: string; passwordFile: string },
  as: RunAs,
): Started {
  const args = [
    `--pgdata=${cluster.dataDir}`,
    '--username=postgres',
    `--pwfile=${cluster.passwordFile}`,
    '--auth=password',
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
  ];
  const child = spawnAs(initdb, args, as);
  const done = new Promise<void>((resolve, reject) => {
    const output = collect(child, as.log);
    child.once('error', (error) => reject(spawnError(initdb, error)));
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`initdb failed (${code ?? signal}): ${output()}`));
    });
  });
  return { child, done };
}

/**
 * Starts the postmaster; `done` resolves once it accepts connections, and rejects, quoting its
 * output, when it exits or cannot be spawned before that. `flags` are its command-line options
 * (`-c name=value` …).
 */
export function runPostmaster(
  postgres: string,
  cluster: { dataDir: string; port: number; flags: readonly string[] },
  as: RunAs,
): Started {
  const args = ['-D', cluster.dataDir, '-p', String(cluster.port), ...cluster.flags];
  const child = spawnAs(postgres, args, as);
  const done = new Promise<void>((resolve, reject) => {
    // Read to the end of its life, not only until it is ready: a pipe nobody reads fills up
    // and stalls the server on its next log line.
    const output = collect(child, as.log, (tail) => {
      if (tail.includes(READY)) resolve();
    });
    child.once('error', (error) => reject(spawnError(postgres, error)));
    child.once('exit', (code, signal) => {
      reject(new Error(`PostgreSQL exited before it was ready (${code ?? signal}): ${output()}`));
    });
  });
  return { child, done };
}

/**
 * Stops a program with SIGINT (for the postmaster, a fast shutdown: open connections are cut)
 * and waits for it to exit; past `deadlineMs` it is killed. One that already exited is left alone.
 */
export async function stopProgram(child: ChildProcess, deadlineMs = 10_000): Promise<void> {
  if (hasExited(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), deadlineMs);
  });
  const outcome = await Promise.race([exited, late]);
  clearTimeout(timer);
  if (outcome === 'late') {
    killGroup(child);
    await exited;
  }
}

/**
 * Kills the program and every process it started (a postmaster's backends, its checkpointer)
 * at once: they share its process group. A postmaster killed alone leaves its children running
 * until they notice, and a checkpointer still writing WAL keeps its folder from being removed.
 */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || hasExited(child)) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone (ESRCH): nothing left to kill.
  }
}

/** True once the program has exited (by itself, or by a signal). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function spawnAs(file: string, args: string[], as: RunAs): ChildProcess {
  // Messages in English whatever the machine's locale: readiness is read from the log.
  const env = { ...process.env, LC_ALL: 'C' };
  // A process group of its own: a terminal's Ctrl-C then reaches only this program, which stops
  // the server itself, in order; and `killGroup` can end the server with all its processes.
  return spawn(file, args, { ...as.ids, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}

/** Logs the child's output as it comes, and keeps its tail for error messages. */
function collect(
  child: ChildProcess,
  log: (text: string) => void,
  onData?: (tail: string) => void,
) {
  let tail = '';
  const take = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    log(text);
    tail = (tail + text).slice(-TAIL_CHARS);
    onData?.(tail);
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  return () => tail.trim();
}

function spawnError(file: string, error: Error): Error {
  return new Error(`could not run ${file}: ${error.message}`, { cause: error });
}
