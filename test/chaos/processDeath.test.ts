import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runChaos } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
beforeAll(async () => {
  // The harness brings its own pools (one per worker process); this one only drops the database.
  db = await createTestDatabase({ maximumPoolSize: 1 });
});
afterAll(async () => {
  await db.drop();
});

// Real processes on a shared machine: generous, so a busy box is not a failure.
describe('process death', { timeout: 120_000 }, () => {
  it('workers SIGKILLed mid-operation and restarted: every key moves money once, refunds within captures within authorizations', async () => {
    const operations = 400;
    const report = await runChaos({
      databaseUrl: db.url,
      charges: operations,
      // Charges, and captures and refunds of them racing on each charge.
      movementRate: 0.4,
      workers: 2,
      concurrency: 16,
      killRate: 0.02,
      crashRate: 0.1,
      abandonRate: 0.1,
      // Many second submissions, so that waits on keys in progress surely happen.
      duplicateRate: 0.2,
      // Short leases, so what a killed worker held is free again soon.
      leaseMs: 1_000,
      providerTimeoutMs: 500,
      seed: 20_240_611,
    });

    expect(report.violations).toEqual([]);
    expect(report.unexpectedErrors).toEqual([]);
    expect(report.unsettled).toEqual([]);
    expect(report.settled).toBe(operations);
    expect(report.ok).toBe(true);
    // The chaos really happened: a run without it would prove nothing.
    expect(report.processesKilled).toBeGreaterThan(0);
    // Killed workers were restarted (not every kill needs one: a worker can report its last
    // operations in the moment it is killed).
    expect(report.processesStarted).toBeGreaterThan(2);
    expect(report.processesStarted).toBeLessThanOrEqual(2 + report.processesKilled);
    expect(report.crashes.total).toBeGreaterThan(0);
    expect(report.retries).toBeGreaterThan(0);
    // Charges made by attempts that died were found and adopted, not made again.
    expect(report.adoptions.total).toBeGreaterThan(0);
    // Clients that walked away left keys for the sweep to finish.
    expect(report.abandoned).toBeGreaterThan(0);
    expect(report.sweep.examined + report.background.sweep.examined).toBeGreaterThan(0);
    // The provider's ledger is no larger than the number of charge keys: no key charged twice.
    expect(report.providerCharges).toBeLessThanOrEqual(report.operations.charges);
    // Each worker's clients shared its engines: their claims and completions went out in batches
    // of several keys (group commit)...
    const { claims, completions } = report.groupCommit;
    expect(claims.batches + completions.batches).toBeGreaterThan(0);
    expect(Math.max(claims.largest, completions.largest)).toBeGreaterThan(1);
    // ...and waited on each other's keys: woken by the holder's completion, or timed out into a
    // 409; in the other worker, or for the other submission, refused at once.
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.waits.woken).toBeGreaterThan(0);
    expect(report.waits.timedOut).toBeGreaterThan(0);
    expect(report.retryableErrors.idempotency_key_in_use ?? 0).toBeGreaterThan(
      report.waits.timedOut,
    );
    // Both kinds of movement ran, and ended every way that matters: money moved, and chargeonce
    // refused what would have broken an invariant (refunds past what is left of the capture).
    const { operations: planned, movements, refusals } = report;
    expect(planned.refunds).toBeGreaterThan(0);
    expect(planned.captures).toBeGreaterThan(0);
    expect(movements.refund.succeeded).toBeGreaterThan(0);
    expect(movements.capture.succeeded).toBeGreaterThan(0);
    expect(movements.refund.refused).toBeGreaterThan(0);
    expect(refusals.exceeds_refundable ?? 0).toBeGreaterThan(0);
    // Crashes hit them as they hit charges. (Once seen at 0 in CI, under load: the counts say
    // what the run did, should it happen again.)
    const counts = { crashes: report.crashes, killed: report.processesKilled, movements };
    expect(report.crashes.onMovements, JSON.stringify(counts)).toBeGreaterThan(0);
    expect(report.providerMovements.refunds.succeeded).toBeGreaterThan(0);
    expect(report.providerMovements.captures.succeeded).toBeGreaterThan(0);
  });
});
