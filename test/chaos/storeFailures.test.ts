import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  migrate,
  StoreUnavailableError,
  type ChargeEngine,
} from '../../src/index.js';
import { createFakeProvider, reconcile, type ObservedResponse } from '../../src/testing/index.js';
import { countGroupCommit } from '../../src/chaos/countGroupCommit.js';
import {
  startEmbeddedPostgres,
  type EmbeddedServer,
} from '../../scripts/support/embeddedPostgres.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aGate, aKey, aRequest, expireLease, readKey, waitFor } from '../support/charges.js';

describe('the database connection dies mid-transaction (pg_terminate_backend)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** Kills every backend of the test database that sits inside a transaction. */
  const terminateInTransaction = () =>
    db.pool.anyFirst(sql.type(z.object({ killed: z.boolean() }))`
      SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND state LIKE 'idle in transaction%'`);

  /**
   * Runs one charge whose `phase` hook stops inside its transaction, kills that transaction's
   * backend, then lets the hook go on: the attempt's result and the provider it charged at.
   */
  async function chargeKilledIn(phase: 'reserve' | 'complete') {
    const gate = aGate();
    let reached = false;
    const provider = createFakeProvider({ dedupe: false });
    const stall = async (tx: DatabaseTransactionConnection) => {
      reached = true;
      await gate.wait();
      await tx.query(sql.unsafe`SELECT 1`);
    };
    const dying = createChargeEngine({ pool: db.pgPool, provider, hooks: { [phase]: stall } });
    const key = aKey();
    const attempt = dying.processCharge(key, aRequest()).catch((e: unknown) => e);
    await waitFor(() => Promise.resolve(reached));
    const killed = await terminateInTransaction();
    gate.open();
    return { key, provider, killed: killed.length, result: await attempt };
  }

  it('in the reserve transaction: StoreUnavailableError, nothing kept, the retry charges once', async () => {
    const { key, provider, killed, result } = await chargeKilledIn('reserve');

    expect(killed).toBeGreaterThanOrEqual(1);
    expect(result).toBeInstanceOf(StoreUnavailableError);
    expect(await readKey(db.pool, db.tables, 'm_1', key)).toBeNull();
    const healthy = createChargeEngine({ pool: db.pgPool, provider });
    await expect(healthy.processCharge(key, aRequest())).resolves.toMatchObject({
      replayed: false,
    });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('in the complete transaction: StoreUnavailableError, then the retry adopts the charge', async () => {
    const { key, provider, result } = await chargeKilledIn('complete');

    expect(result).toBeInstanceOf(StoreUnavailableError);
    expect((await readKey(db.pool, db.tables, 'm_1', key))?.recovery_point).toBe('reserved');
    expect(provider.ledger()).toHaveLength(1);
    await expireLease(db.pool, db.tables, 'm_1', key);
    const healthy = createChargeEngine({ pool: db.pgPool, provider });
    const outcome = await healthy.processCharge(key, aRequest());
    expect(outcome.providerChargeId).toBe(provider.ledger()[0]?.id);
    expect(provider.ledger()).toHaveLength(1);
  });
});

describe('PostgreSQL restarts in the middle of a run', () => {
  // This test needs a server it may restart, so it always runs its own embedded PostgreSQL,
  // whatever DATABASE_URL says.
  let server: EmbeddedServer;
  beforeAll(async () => {
    server = await startEmbeddedPostgres();
  }, 120_000);
  afterAll(async () => {
    await server.stop();
  });

  it('errors surface as StoreUnavailableError, retries succeed, nothing is lost', async () => {
    await migrate(server.adminUrl);
    // Fewer connections than clients: their claims and completions go out in batches, so the
    // restart cuts batches in flight too.
    const pool = await createEnginePool(server.adminUrl, { maximumPoolSize: 2 });
    const counted = countGroupCommit(pool, 'chargeonce');
    const provider = createFakeProvider({ dedupe: false });
    const engine: ChargeEngine = createChargeEngine({
      pool: counted.pool,
      provider,
      leaseMs: 1_000,
      providerTimeoutMs: 500,
      sweepGraceMs: 0,
    });
    const seen = new Set<string>();
    const observations: ObservedResponse[] = [];
    let settled = 0;
    const operation = async (i: number) => {
      const key = `restart-${i}`;
      const request = aRequest({ merchantId: 'm_restart' });
      for (let attempt = 0; attempt < 200; attempt++) {
        try {
          const outcome = await engine.processCharge(key, request);
          observations.push({ merchantId: 'm_restart', key, body: outcome.body });
          settled += 1;
          return;
        } catch (error) {
          seen.add((error as Error).constructor.name);
          if (!(
            error instanceof StoreUnavailableError || error instanceof IdempotencyKeyInUseError
          )) {
            throw error;
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      throw new Error(`${key} never settled`);
    };

    const run = (async () => {
      const queue = Array.from({ length: 150 }, (_, i) => i);
      await Promise.all(
        Array.from({ length: 6 }, async () => {
          for (let i = queue.shift(); i !== undefined; i = queue.shift()) await operation(i);
        }),
      );
    })();
    await waitFor(() => Promise.resolve(settled >= 20), 30_000);
    await server.restart();
    await run;

    expect(settled).toBe(150);
    expect(seen.has('StoreUnavailableError')).toBe(true);
    expect(
      [...seen].every((name) =>
        ['StoreUnavailableError', 'IdempotencyKeyInUseError'].includes(name),
      ),
    ).toBe(true);
    await engine.sweep({ limit: 1_000 });
    const report = await reconcile({
      pool,
      providerLedger: provider.ledger(),
      expectFinished: true,
      observations,
    });
    expect(report.violations).toEqual([]);
    expect(provider.ledger()).toHaveLength(150);
    const { claims, completions } = counted.counts();
    expect(claims.batches + completions.batches).toBeGreaterThan(0);
    await engine.close();
    await pool.end();
  }, 120_000);
});
