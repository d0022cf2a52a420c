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

// Real processes and a real SDK on a shared machine: generous, so a busy box is not a failure.
describe('chargeonce chaos --provider stripe', { timeout: 180_000 }, () => {
  it('runs the harness through the Stripe adapter against the emulator: zero violations', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        ...['--import', 'tsx', 'src/cli.ts', 'chaos', '--database-url', db.url, '--json'],
        ...['--provider', 'stripe', '--charges', '150', '--workers', '1', '--seed', '3'],
        // Faults often enough that each kind happens in a short run.
        ...['--error-rate', '0.08', '--reset-rate', '0.05', '--hang-rate', '0.03'],
        ...['--kill-rate', '0.02', '--lease-ms', '1500', '--provider-timeout-ms', '700'],
      ],
      { env: { ...process.env, DATABASE_URL: '' }, maxBuffer: 64 * 1024 * 1024 },
    );

    const report = JSON.parse(stdout) as ChaosReport & {
      stripeProxy: Record<string, number | undefined>;
    };
    expect(report.violations).toEqual([]);
    expect(report.unexpectedErrors).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.settled).toBe(150);
    // The reconciler read the emulator's charges, not the harness's fake provider.
    expect(report.config.ledger).toBe('provider-module');
    expect(report.outcomes.succeeded).toBeGreaterThan(0);
    expect(report.outcomes.declined).toBeGreaterThan(0);
    // Counted from the emulator's own charge list: every success is one charge there.
    expect(report.providerCharges).toBeGreaterThanOrEqual(report.outcomes.succeeded);
    // Each fault the proxy injects between the SDK and the emulator happened.
    for (const fault of ['dropResponse', 'replaceResponse', 'respond', 'hang'] as const) {
      expect(report.stripeProxy[fault] ?? 0, fault).toBeGreaterThan(0);
    }
    expect(report.adoptions.total).toBeGreaterThan(0);
  });
});
