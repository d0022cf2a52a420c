import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  ChargeNeedsAttentionError,
  createChargeEngine,
  IdempotencyKeyInUseError,
  StoreUnavailableError,
  ProviderTransientError,
  type ChargeEngine,
  type SweepResult,
} from '../../src/index.js';
import { createFakeProvider, type FakeProvider } from '../../src/testing/index.js';
import { createEnginePool } from '../../src/store/resolvePool.js';
import { addSweepResult, emptySweepResult } from '../../src/recovery/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import {
  aKey,
  aRequest,
  readKey,
  seedAbandonedKeys,
  seedInterruptedKey,
} from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const charge = (provider: FakeProvider, providerKey: string) =>
  provider.createCharge(
    {
      providerKey,
      merchantId: 'm_test',
      chargeId: randomUUID(),
      customerId: 'c_42',
      amountMinor: 2000,
      currency: 'NGN',
    },
    { signal: new AbortController().signal },
  );

async function sweepUntilIdle(engine: ChargeEngine, limit: number): Promise<SweepResult> {
  const total = emptySweepResult();
  for (;;) {
    const pass = await engine.sweep({ limit });
    if (pass.examined === 0) return total;
    addSweepResult(total, pass);
  }
}

const unfinished = (merchantId: string) =>
  db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.keys}
    WHERE merchant_id = ${merchantId} AND recovery_point <> 'completed'`);

describe('sweep', () => {
  it('3 sweepers over 1,000 abandoned keys finish each exactly once', async () => {
    const request = aRequest({ merchantId: 'm_sweep_1000' });
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 1_000, request);
    const provider = createFakeProvider({ dedupe: false });
    // Half the crashed attempts had charged before dying.
    const charged = new Set<string>();
    for (const seed of seeds.filter((_, i) => i % 2 === 0)) {
      await charge(provider, seed.providerKey);
      charged.add(seed.providerKey);
    }
    let cancelHookRuns = 0;
    const pools = await Promise.all([0, 1, 2].map(() => createEnginePool(db.url)));
    const sweepers = pools.map((pool) =>
      createChargeEngine({
        pool,
        provider,
        sweepGraceMs: 0,
        hooks: {
          cancel: () => {
            cancelHookRuns += 1;
            return Promise.resolve();
          },
        },
      }),
    );

    const results = await Promise.all(sweepers.map((engine) => sweepUntilIdle(engine, 50)));
    await Promise.all(pools.map((pool) => pool.end()));

    const sum = (k: keyof SweepResult) => results.reduce((n, r) => n + r[k], 0);
    expect(sum('examined')).toBe(1_000);
    expect(sum('adopted')).toBe(500);
    expect(sum('cancelled')).toBe(500);
    expect(sum('resumed') + sum('released') + sum('failed') + sum('skipped')).toBe(0);
    expect(cancelHookRuns).toBe(500);
    expect(results.every((r) => r.examined > 0)).toBe(true);
    // No new charges: a cancelled key was never charged, an adopted one was charged once.
    expect(provider.ledger()).toHaveLength(500);
    expect(await unfinished('m_sweep_1000')).toBe(0);
    const statuses = await db.pool.any(sql.type(
      z.object({ provider_key: z.string(), status: z.string() }),
    )`
      SELECT provider_key, status FROM ${db.tables.charges} WHERE merchant_id = 'm_sweep_1000'`);
    for (const row of statuses) {
      expect(row.status).toBe(charged.has(row.provider_key) ? 'succeeded' : 'cancelled');
    }
  });

  it("with onAbandoned: 'complete', charges what the provider lacks, once per key", async () => {
    const request = aRequest({ merchantId: 'm_sweep_complete' });
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 200, request);
    const provider = createFakeProvider({ dedupe: false });
    for (const seed of seeds.slice(0, 50)) await charge(provider, seed.providerKey);
    const sweepers = [0, 1, 2].map(() =>
      createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0, onAbandoned: 'complete' }),
    );

    const results = await Promise.all(sweepers.map((engine) => sweepUntilIdle(engine, 20)));

    expect(results.reduce((n, r) => n + r.adopted, 0)).toBe(50);
    expect(results.reduce((n, r) => n + r.resumed, 0)).toBe(150);
    expect(provider.ledger()).toHaveLength(200);
    for (const seed of seeds) expect(provider.chargesFor(seed.providerKey)).toBe(1);
  });

  it('a stored sweep outcome is what a later client retry replays', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const request = aRequest({ merchantId: 'm_sweep_replay' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    await charge(provider, seed!.providerKey);

    expect((await engine.sweep()).adopted).toBe(1);
    const replay = await engine.processCharge(seed!.key, request);

    expect(replay).toMatchObject({ replayed: true, status: 'succeeded', httpStatus: 201 });
    expect((await readKey(db.pool, db.tables, 'm_sweep_replay', seed!.key))?.response_body).toBe(
      replay.body,
    );
  });

  it('a cancelled charge replays as 410 to the client that comes back', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const request = aRequest({ merchantId: 'm_sweep_cancel' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);

    expect((await engine.sweep()).cancelled).toBe(1);
    const replay = await engine.processCharge(seed!.key, request);

    expect(replay).toMatchObject({ status: 'cancelled', httpStatus: 410, replayed: true });
    expect(provider.ledger()).toHaveLength(0);
  });

  it('races a client retry on the same keys without a double charge', async () => {
    const request = aRequest({ merchantId: 'm_sweep_race' });
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 60, request);
    const provider = createFakeProvider({ dedupe: false });
    for (const seed of seeds.slice(0, 20)) await charge(provider, seed.providerKey);
    const sweeper = createChargeEngine({
      pool: db.pgPool,
      provider,
      sweepGraceMs: 0,
      onAbandoned: 'complete',
    });
    const client = createChargeEngine({ pool: db.pgPool, provider });

    const [, clientResults] = await Promise.all([
      sweepUntilIdle(sweeper, 5),
      Promise.allSettled(seeds.map((seed) => client.processCharge(seed.key, request))),
    ]);

    for (const r of clientResults) {
      if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(IdempotencyKeyInUseError);
    }
    for (const seed of seeds) expect(provider.chargesFor(seed.providerKey)).toBe(1);
    // Whoever lost comes back to the winner's stored outcome.
    for (const seed of seeds) {
      const outcome = await client.processCharge(seed.key, request);
      expect(outcome.replayed).toBe(true);
      expect(outcome.status).toBe('succeeded');
    }
  });

  it('releases a key abandoned at started, so the retry starts afresh', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_sweep_started' });
    await seedInterruptedKey(db.pool, db.tables, key, request, 'started');

    expect(await engine.sweep()).toMatchObject({ examined: 1, released: 1 });
    expect(await readKey(db.pool, db.tables, 'm_sweep_started', key)).toBeNull();
    expect(provider.calls).toMatchObject({ createCharge: 0, findCharge: 0 });

    const outcome = await engine.processCharge(key, request);
    expect(outcome).toMatchObject({ replayed: false, status: 'succeeded' });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('leaves keys alone while their lease runs or within the grace period', async () => {
    const provider = createFakeProvider();
    const patient = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 3_600_000 });
    await seedAbandonedKeys(db.pool, db.tables, 3, aRequest({ merchantId: 'm_sweep_grace' }));
    const hanging = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider({ beforeAnswer: () => new Promise(() => {}) }),
      providerTimeoutMs: 200,
      leaseMs: 60_000,
    });
    const running = hanging.processCharge(aKey(), aRequest({ merchantId: 'm_sweep_grace' }));
    const eager = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });

    // Grace: the seeded keys saw activity a minute ago, the patient sweeper waits an hour.
    expect((await patient.sweep()).examined).toBe(0);
    await running.catch(() => null);
    // The eager sweeper takes the three, and the released key of the failed attempt.
    expect((await eager.sweep({ limit: 100 })).examined).toBeGreaterThanOrEqual(3);
  });

  it('after maxAttempts parks the key in failed, lists it with why, and never retries it', async () => {
    const provider = createFakeProvider();
    provider.findCharge = () => Promise.reject(new ProviderTransientError('http_503'));
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      sweepGraceMs: 0,
      maxAttempts: 2,
    });
    const request = aRequest({ merchantId: 'm_sweep_stuck' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);

    expect(await engine.sweep()).toMatchObject({ examined: 1, skipped: 1 }); // attempt 2
    expect(await engine.sweep()).toMatchObject({ examined: 1, failed: 1 }); // attempt 3 > 2
    expect(await engine.sweep()).toMatchObject({ examined: 0 });

    const stuck = await engine.listStuck();
    const entry = stuck.find((s) => s.key === seed!.key);
    expect(entry).toMatchObject({ merchantId: 'm_sweep_stuck', chargeId: seed!.chargeId });
    expect(entry?.reason).toContain('http_503');
    await expect(engine.processCharge(seed!.key, request)).rejects.toBeInstanceOf(
      ChargeNeedsAttentionError,
    );
    const status = await engine.status();
    expect(status.byRecoveryPoint.failed).toBeGreaterThanOrEqual(1);
  });
});

describe('a sweep pass where one key throws', () => {
  it('finishes the other keys and keeps their counts', async () => {
    // Before: the pass rejected with the first error, its counts were lost, and the workers
    // still running went on unobserved.
    const request = aRequest({ merchantId: 'm_sweep_one_throws' });
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 3, request);
    const failing = seeds[1]!.key;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      sweepGraceMs: 0,
      hooks: {
        cancel: (_tx, ctx) =>
          ctx.key === failing ? Promise.reject(new StoreUnavailableError()) : Promise.resolve(),
      },
    });

    const result = await engine.sweep({ concurrency: 1 });

    // (Keys other tests of this file left may be in the same pass.)
    expect(result.errored).toBe(1);
    expect(result.cancelled).toBeGreaterThanOrEqual(2);
    for (const seed of seeds) {
      const row = await readKey(db.pool, db.tables, request.merchantId, seed.key);
      expect(row?.recovery_point).toBe(seed.key === failing ? 'reserved' : 'completed');
    }
  });
});
