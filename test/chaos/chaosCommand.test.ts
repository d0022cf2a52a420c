import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChaosReport } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

const run = promisify(execFile);
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 1 });
});
afterAll(async () => {
  await db.drop();
});

async function chaos(...args: string[]) {
  return run(
    process.execPath,
    [
      ...['--import', 'tsx', 'src/cli.ts', 'chaos', '--database-url', db.url, '--json'],
      // Short leases: what crashed attempts held is free again soon.
      ...['--lease-ms', '1000', '--provider-timeout-ms', '500', ...args],
    ],
    { env: { ...process.env, DATABASE_URL: '' }, maxBuffer: 64 * 1024 * 1024 },
  );
}

// Real processes on a shared machine: generous, so a busy box is not a failure.
describe('chargeonce chaos', { timeout: 120_000 }, () => {
  it('exits 0 and reports zero violations on a sound engine and adapter', async () => {
    // Twice as many clients as by default, on a pool of a quarter as many connections: their
    // claims and completions queue for it, and go out in batches.
    const { stdout } = await chaos(
      ...['--charges', '80', '--workers', '1', '--concurrency', '16', '--seed', '7'],
      ...['--duplicate-rate', '0.2', '--wait-ms', '400', '--movement-rate', '0.5'],
    );

    const report = JSON.parse(stdout) as ChaosReport;
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.settled).toBe(80);
    expect(report.config.ledger).toBe('fake-provider');
    expect(report.config).toMatchObject({ duplicateRate: 0.2, waitMs: 400, movementRate: 0.5 });
    expect(report.duplicates).toBeGreaterThan(0);
    // Charges, captures and refunds were mixed, and money moved each way, at the provider too.
    const { operations, movements, providerMovements } = report;
    expect(operations.charges + operations.refunds + operations.captures).toBe(80);
    expect(movements.refund.succeeded).toBeGreaterThan(0);
    expect(movements.capture.succeeded).toBeGreaterThan(0);
    expect(movements.refund.refused + movements.capture.refused).toBeGreaterThan(0);
    expect(providerMovements.refunds.succeeded).toBeGreaterThan(0);
    expect(providerMovements.captures.succeeded).toBeGreaterThan(0);
    // The worker's clients shared its engines: claims or completions of several keys went out
    // as one statement (group commit), and the report says so.
    const { claims, completions } = report.groupCommit;
    expect(claims.batches + completions.batches).toBeGreaterThan(0);
    expect(Math.max(claims.largest, completions.largest)).toBeGreaterThan(1);
  });

  it('catches an adapter whose findCharge finds nothing: double charges, exit 1', async () => {
    // The provider forgets keys at once and fails after charging often: only the lookup could
    // tell a retry that the money already moved.
    const failed = (await chaos(
      '--charges',
      '40',
      '--workers',
      '1',
      '--kill-rate',
      '0',
      '--crash-rate',
      '0',
      '--error-rate',
      '0.4',
      '--reset-rate',
      '0.1',
      '--idempotency-window-ms',
      '0',
      // No background sweeper: clients' own retries are what charge twice here.
      '--sweep-every-ms',
      '0',
      '--provider',
      'test/fixtures/forgetfulProvider.ts',
      '--seed',
      '7',
    ).catch((error: unknown) => error)) as { code?: number; stdout?: string };

    expect(failed.code).toBe(1);
    const report = JSON.parse(failed.stdout ?? '') as ChaosReport;
    expect(report.ok).toBe(false);
    expect(report.config.ledger).toBe('provider-module');
    expect(report.violations.some((v) => v.kind === 'double_charge')).toBe(true);
  });
});
