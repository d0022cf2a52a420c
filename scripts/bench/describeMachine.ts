import { cpus, loadavg, totalmem, type as osType, arch } from 'node:os';
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import type { MachineDescription } from './BenchResults.js';

/** PostgreSQL settings that change what a commit costs, reported with the numbers. */
const SETTINGS = ['fsync', 'synchronous_commit', 'wal_sync_method', 'shared_buffers'] as const;

/**
 * The machine and database the numbers come from: cores, CPU model, memory, versions, and the
 * settings that decide what a commit costs. Nothing that names this machine: no host, no path.
 */
export async function describeMachine(
  pool: DatabasePool,
  source: MachineDescription['postgresSource'],
  note: string | null,
): Promise<MachineDescription> {
  const processors = cpus();
  const version = await pool.oneFirst(
    sql.type(z.object({ version: z.string() }))`SELECT version() AS version`,
  );
  const postgresSettings: Record<string, string> = {};
  for (const name of SETTINGS) {
    postgresSettings[name] = await pool.oneFirst(
      sql.type(z.object({ value: z.string() }))`SELECT current_setting(${name}) AS value`,
    );
  }
  return {
    cpuCount: processors.length,
    cpuModel: processors[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${osType()} ${arch()}`,
    node: process.version,
    // "PostgreSQL 17.2 on x86_64-pc-linux-gnu, compiled by …": the build, not the machine.
    postgres: version.split(',')[0] ?? version,
    postgresSource: source,
    postgresSettings,
    loadPerCoreAtStart: Math.round(((loadavg()[0] ?? 0) / processors.length) * 100) / 100,
    note,
  };
}
