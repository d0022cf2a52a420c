import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_LOCK_WAIT_MS } from '../../src/store/keyLockWait.js';
import { runChaos } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 1 });
});
afterAll(async () => {
  await db.drop();
});

// Claims held uncommitted (a slow `reserve` hook, of charges, refunds and captures) while their
// request is sent again: each retry must be answered while the claim is still held, a 409 or
// the end of its own wait, not kept waiting on the key for as long as the holder's transaction
// lasts; and nothing else may break.
describe('held claims', { timeout: 180_000 }, () => {
  it('every retry of a held claim is answered while it is held: no violation', async () => {
    const report = await runChaos({
      databaseUrl: db.url,
      charges: 150,
      movementRate: 0.4,
      workers: 0,
      concurrency: 8,
      holdRate: 0.25,
      poolSize: 4,
      leaseMs: 1_000,
      providerTimeoutMs: 400,
      seed: 20_261_206,
    });

    expect(report.violations).toEqual([]);
    expect(report.unexpectedErrors).toEqual([]);
    expect(report.unsettled).toEqual([]);
    expect(report.holds.held).toBeGreaterThan(0);
    expect(report.holds.blocked).toBe(0);
    expect(report.holds.otherwise).toBe(0);
    expect(report.holds.answered).toBe(report.holds.held);
    // A refusing retry is answered once its wait on the held key's lock ran out, never sooner.
    expect(report.holds.slowestRefusalMs).toBeGreaterThanOrEqual(KEY_LOCK_WAIT_MS);
    // Half the retries waited on the held key (\`waitMs\`), and their waits ran out: no
    // notification can come for a key that was never visible to mark.
    expect(report.waits.timedOut).toBeGreaterThan(0);
    expect(report.config.holdRate).toBe(0.25);
    expect(report.ok).toBe(true);
  });
});
