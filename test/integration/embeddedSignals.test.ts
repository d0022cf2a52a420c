import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createChargeEngine, createEnginePool } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';

// Each program runs with a private TMPDIR, so the cluster folders it makes are told apart from
// those of other runs on the machine. The folder must be enterable by the `postgres` user when
// the tests run as root.
let scratch: string | undefined;
afterEach(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  scratch = undefined;
});

type Run = { child: ChildProcess; output: () => string; exited: Promise<void> };

function start(command: string, args: string[], tmp: string, group: boolean): Run {
  const child = spawn(command, args, {
    env: { ...process.env, TMPDIR: tmp, DATABASE_URL: '', PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own: a terminal's Ctrl-C signals the whole group.
    detached: group,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, output: () => output, exited };
}

/** The cluster folders (`chargeonce-pg-*`) in `tmp`. */
async function clusters(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith('chargeonce-pg-'));
}

/** True once a cluster in `tmp` accepts connections (its postmaster.pid says `ready`). */
async function clusterReady(tmp: string): Promise<boolean> {
  for (const name of await clusters(tmp)) {
    const pid = await readFile(join(tmp, name, 'data', 'postmaster.pid'), 'utf8').catch(() => '');
    if (pid.split('\n')[7]?.trim() === 'ready') return true;
  }
  return false;
}

/** Processes still running whose command line names `tmp` (a postmaster, a backend). */
async function processesUsing(tmp: string): Promise<string[]> {
  if (!existsSync('/proc')) return [];
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(tmp)) found.push(`${pid}: ${cmdline.replaceAll('\0', ' ')}`);
  }
  return found;
}

async function until(condition: () => Promise<boolean> | boolean, what: string, run: Run) {
  for (let i = 0; i < 600; i++) {
    if (await condition()) return;
    if (run.child.exitCode !== null) throw new Error(`exited before ${what}:\n${run.output()}`);
    await delay(100);
  }
  throw new Error(`never ${what}:\n${run.output()}`);
}

/**
 * Signals the program once it is up, then checks that it ends (a liveness bound, not a timing
 * check) and that no cluster folder or PostgreSQL process is left.
 */
async function interrupt(
  run: Run,
  tmp: string,
  signal: NodeJS.Signals,
  target: 'group' | 'process',
) {
  const pid = run.child.pid;
  if (pid === undefined) throw new Error('not started');
  process.kill(target === 'group' ? -pid : pid, signal);
  const ended = await Promise.race([run.exited.then(() => true), delay(30_000, false)]);
  if (!ended) process.kill(target === 'group' ? -pid : pid, 'SIGKILL');
  expect(ended, `still running 30 s after ${signal}:\n${run.output()}`).toBe(true);
  expect(await clusters(tmp), run.output()).toEqual([]);
  expect(await processesUsing(tmp)).toEqual([]);
}

async function privateTmp(): Promise<string> {
  scratch = await mkdtemp(join(tmpdir(), 'chargeonce-signals-'));
  await chmod(scratch, 0o755);
  return scratch;
}

describe('embedded PostgreSQL ends with the program', () => {
  it('Ctrl-C on `npm run serve` stops it and removes its folder', async () => {
    const tmp = await privateTmp();
    const run = start('npm', ['run', 'serve'], tmp, true);
    await until(() => run.output().includes('Ctrl-C to stop'), 'served', run);
    // The recovery workers run on the engine (and stop with it below).
    expect(run.output()).toMatch(/the sweeper and reaper run every \d+ s/);
    // While it runs: a charge, then the engine's instruments as Prometheus scrapes them.
    const api = /payment API on (http:\/\/\S+)/.exec(run.output())?.[1];
    const charged = await fetch(`${String(api)}/charges`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_shop',
        'content-type': 'application/json',
        'idempotency-key': 'k-serve-metrics',
        connection: 'close',
      },
      body: JSON.stringify({ customerId: 'c_ada', amountMinor: 2000, currency: 'NGN' }),
    });
    expect(charged.status).toBe(201);
    const metrics = await (
      await fetch(`${String(api)}/metrics`, { headers: { connection: 'close' } })
    ).text();
    expect(metrics).toMatch(
      /chargeonce_charges_total\{[^}]*chargeonce_outcome_status="succeeded"[^}]*\} 1/,
    );
    // The admin commands it prints reach the keys it wrote.
    const url = /list --database-url '([^']+)'/.exec(run.output())?.[1];
    const pool = await createEnginePool(String(url));
    try {
      const admin = createChargeEngine({ pool, provider: createFakeProvider() });
      expect(await admin.inspect({ merchantId: 'm_shop', key: 'k-serve-metrics' })).toMatchObject({
        recoveryPoint: 'completed',
      });
    } finally {
      await pool.end();
    }

    await interrupt(run, tmp, 'SIGINT', 'group');
  });

  it('Ctrl-C on `npm run demo` stops it and removes its folder', async () => {
    const tmp = await privateTmp();
    const run = start('npm', ['run', 'demo'], tmp, true);
    await until(() => run.output().includes('chargeonce demo on embedded'), 'started', run);

    await interrupt(run, tmp, 'SIGINT', 'group');
  });

  it('SIGTERM on `chargeonce chaos` (embedded) stops it, removes its folder, and ends by the signal', async () => {
    const tmp = await privateTmp();
    const run = start(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'chaos', '--charges', '100000', '--workers', '0'],
      tmp,
      false,
    );
    await until(() => clusterReady(tmp), 'ready', run);

    await interrupt(run, tmp, 'SIGTERM', 'process');
    expect(run.child.signalCode).toBe('SIGTERM');
  });

  it('SIGINT to the process alone (no terminal) does the same', async () => {
    const tmp = await privateTmp();
    const run = start(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', 'chaos', '--charges', '100000', '--workers', '0'],
      tmp,
      false,
    );
    await until(() => clusterReady(tmp), 'ready', run);

    await interrupt(run, tmp, 'SIGINT', 'process');
    expect(run.child.signalCode).toBe('SIGINT');
  });

  it('process.exit with a live server kills it and removes its folder', async () => {
    const tmp = await privateTmp();
    const script = [
      "import { startEmbeddedPostgres } from './src/cli/startEmbeddedPostgres.ts';",
      'await startEmbeddedPostgres();',
      'process.exit(4);',
    ].join('\n');
    const run = start(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '--eval', script],
      tmp,
      false,
    );
    await run.exited;

    expect(run.child.exitCode, run.output()).toBe(4);
    expect(await clusters(tmp)).toEqual([]);
    expect(await processesUsing(tmp)).toEqual([]);
  });
});
