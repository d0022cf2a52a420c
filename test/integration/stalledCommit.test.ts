import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { sql } from 'slonik';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { adminQuery } from '../support/postgres.js';
import { aKey, aRequest, readKey, sweepingDuringCharge, waitFor } from '../support/charges.js';

// A real stalled COMMIT, no fault injection: the claim's transaction asks for synchronous
// commit while the only synchronous standby named does not exist, so PostgreSQL holds the
// COMMIT (wait event SyncRep) until the setting is lifted. Only sessions that ask for
// synchronous commit wait: the test server runs with it off, so other tests go on.

const LEASE_MS = 1_000;
let db: TestDatabase;
const admin = (...statements: string[]) => adminQuery(inject('pgAdminUrl'), ...statements);
const standbys = async () => {
  const [result] = await admin('SHOW synchronous_standby_names');
  return (result?.rows[0] as { synchronous_standby_names: string }).synchronous_standby_names;
};

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await admin('ALTER SYSTEM RESET synchronous_standby_names', 'SELECT pg_reload_conf()');
  await db.drop();
});

describe('a claim whose COMMIT stalls past the lease', () => {
  it('renews the lease before charging: a sweeper meanwhile finds the key held, and nothing is cancelled', async () => {
    // Before: the COMMIT came back after the lease had ended, createCharge went out anyway, a
    // sweeper found nothing at the provider and stored `cancelled`; then the charge landed.
    const sweeper = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      leaseMs: LEASE_MS,
      providerTimeoutMs: 300,
      sweepGraceMs: 0,
    });
    const { provider, swept } = sweepingDuringCharge(() => sweeper.sweep());
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      leaseMs: LEASE_MS,
      providerTimeoutMs: 300,
      hooks: {
        reserve: async (tx) => {
          await tx.query(sql.unsafe`SET LOCAL synchronous_commit = on`);
        },
      },
    });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_stalled_commit' });

    await admin(
      "ALTER SYSTEM SET synchronous_standby_names = 'chargeonce_absent_standby'",
      'SELECT pg_reload_conf()',
    );
    await waitFor(async () => (await standbys()) === 'chargeonce_absent_standby');
    const charging = engine.processCharge(key, request);
    // The claim's COMMIT is waiting for the standby; hold it there past the lease.
    await waitFor(async () => {
      const [waiting] = await admin(
        `SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND datname = '${db.name}'`,
      );
      return (waiting?.rowCount ?? 0) > 0;
    }, 10_000);
    await sleep(LEASE_MS + 200);
    await admin('ALTER SYSTEM RESET synchronous_standby_names', 'SELECT pg_reload_conf()');

    const outcome = await charging;

    expect(outcome.status).toBe('succeeded');
    expect(swept()).toMatchObject({ examined: 0, cancelled: 0 });
    expect(provider.ledger()).toHaveLength(1);
    expect(await readKey(db.pool, db.tables, request.merchantId, key)).toMatchObject({
      recovery_point: 'completed',
      response_status: 201,
    });
  });
});
