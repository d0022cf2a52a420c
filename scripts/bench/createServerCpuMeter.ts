import { readFile, readlink, realpath } from 'node:fs/promises';
import pg from 'pg';
import { withApplicationName } from './withApplicationName.js';

/** CPU time so far of a set of server processes, in nanoseconds, by process id. */
export type CpuSnapshot = ReadonlyMap<number, number>;

/** Reads how much CPU PostgreSQL's backends have used, when the server runs on this machine. */
export type ServerCpuMeter = {
  /** Where CPU time is read from, for the report; `null` when it cannot be, with the reason. */
  source: string | null;
  unavailableBecause: string | null;
  /** The CPU time so far of every backend whose `application_name` is `applicationName`. */
  snapshot(applicationName: string): Promise<CpuSnapshot | null>;
  end(): Promise<void>;
};

/**
 * Linux reports a process's CPU time in /proc/<pid>/schedstat in nanoseconds (the first field);
 * /proc/<pid>/stat in clock ticks of 1/100 s (utime + stime, fields 14 and 15), too coarse for a
 * short run but a fallback where schedstat is missing.
 */
const TICK_NS = 10_000_000;

/**
 * A meter on its own connection (not counted: it carries another `application_name`). It works
 * only when the server's processes are visible here: the meter's own backend must have the
 * server's data directory as its working directory, which no process of another server, on this
 * machine or under a reused process id, has. Anything else (a remote `DATABASE_URL`, a role
 * that may not read `data_directory`, no /proc) leaves every reading `null`.
 */
export async function createServerCpuMeter(url: string): Promise<ServerCpuMeter> {
  const client = new pg.Client({
    connectionString: withApplicationName(url, 'chargeonce-bench-meter'),
  });
  client.on('error', () => undefined);
  await client.connect();
  const end = () => client.end();
  const unavailable = (reason: string): ServerCpuMeter => ({
    source: null,
    unavailableBecause: reason,
    snapshot: () => Promise.resolve(null),
    end,
  });

  let own: { pid: number; dir: string };
  try {
    const result = await client.query<{ pid: number; dir: string }>(
      `SELECT pg_backend_pid() AS pid, current_setting('data_directory') AS dir`,
    );
    const row = result.rows[0];
    if (!row) return unavailable('the server did not say where its data directory is');
    own = row;
  } catch {
    return unavailable('this role may not read the server’s data_directory');
  }
  try {
    const [cwd, dir] = await Promise.all([readlink(`/proc/${own.pid}/cwd`), realpath(own.dir)]);
    if (cwd !== dir) return unavailable('the server’s processes are not on this machine');
  } catch {
    return unavailable(
      'the server’s processes are not visible from here (no /proc, or another machine)',
    );
  }
  const read = (await cpuTimeNs(own.pid, 'schedstat')) !== null ? 'schedstat' : 'stat';
  if ((await cpuTimeNs(own.pid, read)) === null) {
    return unavailable('the server’s processes’ CPU times cannot be read');
  }

  return {
    source:
      read === 'schedstat'
        ? '/proc/<pid>/schedstat, in nanoseconds'
        : '/proc/<pid>/stat, in ticks of 10 ms: coarse for a short run',
    unavailableBecause: null,
    async snapshot(applicationName) {
      const result = await client.query<{ pid: number }>({
        name: 'backends',
        text: `SELECT pid FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = $1`,
        values: [applicationName],
      });
      const snapshot = new Map<number, number>();
      for (const { pid } of result.rows) {
        const ns = await cpuTimeNs(pid, read);
        // A backend that ended between the query and the read has nothing more to count.
        if (ns !== null) snapshot.set(pid, ns);
      }
      return snapshot;
    },
    end,
  };
}

/**
 * The CPU the backends of `after` used since `before`, in µs. A backend that started in between
 * counts from zero (its start-up is part of the run); one that ended in between is not counted.
 */
export function cpuBetweenUs(before: CpuSnapshot, after: CpuSnapshot): number {
  let ns = 0;
  for (const [pid, now] of after) {
    const then = before.get(pid) ?? 0;
    // Smaller than before: the pid was reused by a new backend, which counts from zero.
    ns += now >= then ? now - then : now;
  }
  return ns / 1_000;
}

async function cpuTimeNs(pid: number, file: 'schedstat' | 'stat'): Promise<number | null> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return null;
  }
  if (file === 'schedstat') {
    const ns = Number(text.split(' ')[0]);
    return Number.isFinite(ns) ? ns : null;
  }
  // The command name in parentheses may hold spaces: fields are counted after its ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks * TICK_NS : null;
}
