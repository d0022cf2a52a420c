import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PROVIDER_FAULTS, runChaos } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 1 });
});
afterAll(async () => {
  await db.drop();
});

// The faults at the edges of time, all at once and at high rates: attempts stalled past their
// lease while a sweeper runs, hosts suspended (their monotonic clock stopped), wall-clock steps, provider outages longer than maxAttempts, a
// reaper with a short retention while clients retry and come back late, and a provider that
// charges the wrong amount or answers malformed. Each must fire, and nothing may break.
describe('time faults', { timeout: 180_000 }, () => {
  it('stalls, clock steps, outages, reaping and bad provider answers: no violation', async () => {
    const charges = 200;
    const report = await runChaos({
      databaseUrl: db.url,
      charges,
      workers: 0,
      concurrency: 8,
      crashRate: 0.05,
      stallRate: 0.15,
      clockStepRate: 0.05,
      outageRate: 0.02,
      outageMs: 1_500,
      retentionMs: 300,
      lateRetryRate: 0.3,
      duplicateRate: 0.2,
      sweepEveryMs: 100,
      poolSize: 4,
      providerFaults: { ...DEFAULT_PROVIDER_FAULTS, wrongAmount: 0.06, malformed: 0.06 },
      leaseMs: 1_000,
      providerTimeoutMs: 400,
      seed: 20_261_202,
    });

    expect(report.violations).toEqual([]);
    expect(report.unexpectedErrors).toEqual([]);
    expect(report.unsettled).toEqual([]);
    expect(report.ok).toBe(true);
    // Every fault really happened.
    expect(report.stalls).toBeGreaterThan(0);
    expect(report.suspends).toBeGreaterThan(0);
    expect(report.clockSteps).toBeGreaterThan(0);
    expect(report.outages.started).toBeGreaterThan(0);
    expect(report.outages.refusedRequests).toBeGreaterThan(0);
    expect(report.providerFaults.wrongAmount).toBeGreaterThan(0);
    expect(report.providerFaults.malformed).toBeGreaterThan(0);
    expect(report.background.sweep.examined).toBeGreaterThan(0);
    expect(report.background.reaped).toBeGreaterThan(0);
    // Late clients were refused, not charged again; charges of the wrong amount were parked.
    expect(report.late.expired).toBeGreaterThan(0);
    expect(report.parked.length).toBeGreaterThan(0);
    expect(report.outcomes.parked).toBeGreaterThan(0);
    // Through all of it the clients shared the harness's engines: claims or completions went out
    // in batches, and waits on keys in progress were woken by the holders' completions.
    expect(
      report.groupCommit.claims.batches + report.groupCommit.completions.batches,
    ).toBeGreaterThan(0);
    expect(report.waits.woken).toBeGreaterThan(0);
  });
});
