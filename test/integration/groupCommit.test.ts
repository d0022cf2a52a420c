import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  type PgPoolLike,
} from '../../src/index.js';
import { sql } from 'slonik';
import { z } from 'zod';
import { batchStatements } from '../../src/store/batchStatements.js';
import { watchedPool } from '../../src/store/watchedPool.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { gatedProvider } from '../support/gatedProvider.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { startWireProxy, type WireProxy } from '../support/wireProxy.js';
import { aKey, aRequest, readCharges, waitFor } from '../support/charges.js';
import { WAITERS_CHANNEL, waiterPayload } from '../../src/store/hotStatements.js';

// Group commit on the wire: concurrent calls share statements, each key's outcome stays its own.

let db: TestDatabase;
let proxy: WireProxy;
let pool: PgPoolLike;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startWireProxy(db.url);
  pool = await createEnginePool(proxy.url, { maximumPoolSize: 4 });
});
afterAll(async () => {
  await pool.end();
  await proxy.close();
  await db.drop();
});

const CALLS = 32;

/** The merchant's keys (only those with waiters marked, with `marked`). */
async function countKeys(merchantId: string, marked = false): Promise<number> {
  return db.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM ${db.tables.keys}
      WHERE merchant_id = ${merchantId} AND (${!marked} OR has_waiters)`,
  );
}

/**
 * `pool`, noting the size of every batch claim (and batch completion) sent through it (the real
 * pool does the work).
 */
function noteBatchClaims(claimSizes: number[], completionSizes: number[] = []): PgPoolLike {
  const { claim, complete } = batchStatements(db.tables);
  return watchedPool(pool, (config) => {
    const size = () => (config.values?.[0] as unknown[]).length;
    if (config.name === claim.name) claimSizes.push(size());
    if (config.name === complete.name) completionSizes.push(size());
  });
}

describe('group commit', () => {
  it('32 concurrent fresh charges share round trips and commits, each charged once', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool, provider });
    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_warm' })); // prepares
    const merchantId = 'm_group';
    proxy.reset();

    const outcomes = await Promise.all(
      Array.from({ length: CALLS }, () => engine.processCharge(aKey(), aRequest({ merchantId }))),
    );

    expect(outcomes.every((o) => o.status === 'succeeded' && !o.replayed)).toBe(true);
    expect(new Set(outcomes.map((o) => o.chargeId)).size).toBe(CALLS);
    const ledgerKeys = provider.ledger().map((e) => e.providerKey);
    expect(ledgerKeys).toHaveLength(CALLS + 1); // with the warm-up charge
    expect(new Set(ledgerKeys).size).toBe(CALLS + 1);
    const local = await readCharges(db.pool, db.tables, merchantId);
    expect(local.filter((c) => c.status === 'succeeded')).toHaveLength(CALLS);
    const { roundTrips, endedInTransaction } = proxy.stats();
    // Unbatched this is 2 per charge; every round trip is still its own committed statement.
    expect(roundTrips).toBeLessThan(CALLS);
    expect(endedInTransaction).toBe(0);
  });

  it('answers each call of a mixed batch as if it had been alone', async () => {
    const provider = createFakeProvider();
    const claimSizes: number[] = [];
    const engine = createChargeEngine({ pool: noteBatchClaims(claimSizes), provider });
    const merchantId = 'm_mixed';
    const done = aKey();
    const reused = aKey();
    const first = await engine.processCharge(done, aRequest({ merchantId }));
    await engine.processCharge(reused, aRequest({ merchantId, amountMinor: 700 }));
    const twice = aKey();
    const fresh = Array.from({ length: 10 }, () => aKey());
    // The first of four blockers goes out alone (no other call waits on a statement); every call
    // made after it, in the same turn, is gathered into one batch: three blockers and these 14.
    const blockers = [1, 2, 3, 4].map(() => engine.processCharge(aKey(), aRequest({ merchantId })));

    const settled = await Promise.allSettled([
      engine.processCharge(done, aRequest({ merchantId })),
      engine.processCharge(reused, aRequest({ merchantId, amountMinor: 701 })),
      engine.processCharge(twice, aRequest({ merchantId })),
      engine.processCharge(twice, aRequest({ merchantId })),
      ...fresh.map((key) => engine.processCharge(key, aRequest({ merchantId }))),
    ]);
    await Promise.all(blockers);

    // The replay, the reuse, the key sent twice and the ten new keys: all in one claim.
    expect(claimSizes).toEqual([17]);
    const [replay, refused, twiceA, twiceB, ...news] = settled;
    expect(replay).toMatchObject({
      status: 'fulfilled',
      value: { replayed: true, body: first.body },
    });
    expect(refused.status).toBe('rejected');
    const reason: unknown = refused.status === 'rejected' ? refused.reason : null;
    expect(reason).toBeInstanceOf(IdempotencyKeyReusedError);
    expect((reason as IdempotencyKeyReusedError).differingFields).toEqual(['amountMinor']);
    const twiceOutcomes = [twiceA, twiceB].map((s): unknown =>
      s.status === 'fulfilled' ? (s.value.replayed ? 'replayed' : 'charged') : s.reason,
    );
    expect(twiceOutcomes.filter((o) => o === 'charged')).toHaveLength(1);
    const other = twiceOutcomes.find((o) => o !== 'charged');
    expect(other === 'replayed' || other instanceof IdempotencyKeyInUseError).toBe(true);
    expect(news.every((s) => s.status === 'fulfilled' && !s.value.replayed)).toBe(true);
    const ledgerKeys = provider.ledger().map((e) => e.providerKey);
    expect(new Set(ledgerKeys).size).toBe(ledgerKeys.length);
    expect(ledgerKeys).toHaveLength(2 + 1 + fresh.length + 4);
  });

  it('a storm on one key shares one batch: the first claim charges, the rest see its row', async () => {
    const provider = createFakeProvider();
    const claimSizes: number[] = [];
    const engine = createChargeEngine({ pool: noteBatchClaims(claimSizes), provider });
    const merchantId = 'm_storm';
    await engine.processCharge(aKey(), aRequest({ merchantId })); // prepares
    const key = aKey();
    proxy.reset();

    // The first of four blockers goes out alone (no other call waits on a statement); every call
    // made after it, in the same turn, is gathered into one batch: three blockers and the storm.
    const blockers = [1, 2, 3, 4].map(() => engine.processCharge(aKey(), aRequest({ merchantId })));
    const storm = await Promise.allSettled([
      ...Array.from({ length: 15 }, () => engine.processCharge(key, aRequest({ merchantId }))),
      engine.processCharge(key, aRequest({ merchantId, amountMinor: 999 })),
    ]);
    await Promise.all(blockers);

    const charged = storm.filter((s) => s.status === 'fulfilled');
    expect(charged).toHaveLength(1);
    const reasons = storm.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
    expect(reasons.slice(0, 14).every((r) => r instanceof IdempotencyKeyInUseError)).toBe(true);
    const reused = reasons[14];
    expect(reused).toBeInstanceOf(IdempotencyKeyReusedError);
    expect((reused as IdempotencyKeyReusedError).differingFields).toEqual(['amountMinor']);
    expect(provider.ledger()).toHaveLength(6);
    // One claim for the whole storm: a key in one batch sixteen times, not in sixteen batches.
    expect(claimSizes).toEqual([19]);
    // Two claims (the first blocker's, then the batch) and at most one completion per charge.
    expect(proxy.stats().roundTrips).toBeLessThanOrEqual(2 + 5);
  });

  it('sends replays alone below the pool, once most claims only read', async () => {
    const provider = createFakeProvider();
    const claimSizes: number[] = [];
    const engine = createChargeEngine({ pool: noteBatchClaims(claimSizes), provider });
    const merchantId = 'm_reads';
    const keys = [aKey(), aKey(), aKey()];
    for (const key of keys) await engine.processCharge(key, aRequest({ merchantId }));
    // Replays one at a time, until most recent claims are reads.
    for (let i = 0; i < 60; i++) await engine.processCharge(keys[i % 3]!, aRequest({ merchantId }));
    claimSizes.length = 0;

    // Three at once on a pool of four: a read has no commit to share, so none waits for a batch.
    const replays = await Promise.all(
      keys.map((key) => engine.processCharge(key, aRequest({ merchantId }))),
    );

    expect(replays.every((o) => o.replayed)).toBe(true);
    expect(claimSizes).toEqual([]);
    // Fresh charges still batch from the second call on: the share turns back to writes.
    const fresh = Array.from({ length: 80 }, () => aKey());
    for (const key of fresh.slice(0, 60)) await engine.processCharge(key, aRequest({ merchantId }));
    await Promise.all(
      fresh.slice(60).map((key) => engine.processCharge(key, aRequest({ merchantId }))),
    );
    expect(claimSizes).toEqual([19]);
  });

  it('a batched completion wakes the waiters of every key it completes', async () => {
    const { provider, open, fake } = gatedProvider();
    const completionSizes: number[] = [];
    const engine = createChargeEngine({ pool: noteBatchClaims([], completionSizes), provider });
    // The waiters' engine, as in another process, on a pool of its own.
    const other = createChargeEngine({ pool: db.pgPool, provider, inProgress: { waitMs: 20_000 } });
    const merchantId = 'm_batch_wake';
    const keys = Array.from({ length: 12 }, () => aKey());
    const charges = keys.map((key) => engine.processCharge(key, aRequest({ merchantId })));
    await waitFor(async () => (await countKeys(merchantId)) === keys.length);
    const heard = new Set<string>();
    const listening = await db.pgPool.connect();
    (listening as unknown as NodeJS.EventEmitter).on('notification', (m: { payload?: string }) =>
      heard.add(m.payload ?? ''),
    );
    await listening.query({ text: `LISTEN ${WAITERS_CHANNEL}` });
    const waits = keys.map((key) => other.processCharge(key, aRequest({ merchantId })));
    await waitFor(async () => (await countKeys(merchantId, true)) === keys.length);

    // Twelve completions at once on a pool of four: most of them share statements.
    open();
    const [won, waited] = await Promise.all([Promise.all(charges), Promise.all(waits)]);

    expect(completionSizes.length).toBeGreaterThan(0);
    expect(waited.map((o) => o.body)).toEqual(won.map((o) => o.body));
    expect(fake.ledger()).toHaveLength(keys.length);
    // Every key's completion, batched or alone, named it to its waiters.
    const payloads = keys.map((key) =>
      waiterPayload(db.tables.schema, { merchantId, operation: 'charge', key }),
    );
    await waitFor(() => Promise.resolve(payloads.every((p) => heard.has(p))));
    await listening.query({ text: `UNLISTEN ${WAITERS_CHANNEL}` });
    listening.release();
    await other.close();
  });

  it('with groupCommit: false, each charge keeps its own 2 round trips', async () => {
    const engine = createChargeEngine({ pool, provider: createFakeProvider(), groupCommit: false });
    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_warm2' }));
    proxy.reset();

    await Promise.all(
      Array.from({ length: 8 }, () =>
        engine.processCharge(aKey(), aRequest({ merchantId: 'm_solo' })),
      ),
    );

    expect(proxy.stats().roundTrips).toBe(16);
  });
});
