import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider, reconcile, type FakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, chargeAtProvider, seedAbandonedKeys } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** A merchant of its own per test, and a few clean charges in it. */
async function cleanRun(merchantId: string) {
  const provider = createFakeProvider({ dedupe: false });
  const engine = createChargeEngine({ pool: db.pgPool, provider });
  const outcomes = [];
  for (let i = 0; i < 3; i++) {
    const key = aKey();
    outcomes.push({ key, outcome: await engine.processCharge(key, aRequest({ merchantId })) });
  }
  return { provider, engine, outcomes };
}

const check = (provider: FakeProvider, merchantId: string, extra = {}) =>
  reconcile({
    pool: db.pgPool,
    providerLedger: provider.ledger(),
    merchantIds: [merchantId],
    ...extra,
  });

describe('reconcile', () => {
  it('finds nothing wrong in a clean run', async () => {
    const { provider, outcomes } = await cleanRun('m_rec_clean');
    const report = await check(provider, 'm_rec_clean', {
      expectFinished: true,
      observations: outcomes.map((o) => ({
        merchantId: 'm_rec_clean',
        key: o.key,
        body: o.outcome.body,
      })),
    });
    expect(report.violations).toEqual([]);
    expect(report.checked).toEqual({ providerCharges: 3, localCharges: 3, observations: 3 });
  });

  it('finds a double charge', async () => {
    const { provider } = await cleanRun('m_rec_double');
    const first = provider.ledger()[0]!;
    // The provider charges the same key again, as it would once its window expired.
    await provider.createCharge(
      {
        providerKey: first.providerKey,
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c_42',
        amountMinor: 2000,
        currency: 'NGN',
      },
      { signal: new AbortController().signal },
    );
    const report = await check(provider, 'm_rec_double');
    expect(report.violations).toEqual([
      expect.objectContaining({ kind: 'double_charge', providerKey: first.providerKey }),
    ]);
  });

  it('finds a lost charge: money moved, recorded as cancelled', async () => {
    const provider = createFakeProvider();
    const [seed] = await seedAbandonedKeys(
      db.pool,
      db.tables,
      1,
      aRequest({ merchantId: 'm_rec_lost' }),
    );
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET status = 'cancelled' WHERE merchant_id = 'm_rec_lost'`);
    await provider.createCharge(
      {
        providerKey: seed!.providerKey,
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c_42',
        amountMinor: 2000,
        currency: 'NGN',
      },
      { signal: new AbortController().signal },
    );
    const report = await check(provider, 'm_rec_lost');
    expect(report.violations.map((v) => v.kind)).toEqual(['lost_charge']);
  });

  it('finds a charge whose key went away at reserved, and the second charge a retry made', async () => {
    // A charge made, its answer lost, its key deleted at `reserved` (an engine that released it
    // as it may at `started`), and the client's retry charged afresh under a new provider key:
    // each charge has a local row, so only the first one's missing key tells.
    const merchantId = 'm_rec_orphan';
    const provider = createFakeProvider();
    const request = aRequest({ merchantId });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    const made = await chargeAtProvider(provider, seed!, request);
    await db.pool.query(sql.unsafe`
      DELETE FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${seed!.key}`);
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    await engine.processCharge(seed!.key, request);
    expect(provider.ledger()).toHaveLength(2);

    const report = await check(provider, merchantId, { expectFinished: true });
    expect(report.violations).toEqual([
      expect.objectContaining({
        kind: 'lost_charge',
        providerKey: seed!.providerKey,
        providerChargeId: made.id,
      }),
    ]);
  });

  it('excuses a key parked for a wrong amount only when the provider was asked the right one', async () => {
    const merchantId = 'm_rec_wrong_amount';
    const fake = createFakeProvider();
    // Charges one more than it was asked, and says so: the engine refuses the answer and parks.
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: {
        findCharge: (key, options) => fake.findCharge(key, options),
        createCharge: (input, options) =>
          fake.createCharge({ ...input, amountMinor: input.amountMinor + 1 }, options),
      },
    });
    const key = aKey();
    await engine.processCharge(key, aRequest({ merchantId, amountMinor: 2000 })).catch(() => null);
    const asked = (amount: number) =>
      fake.ledger().map((entry) => ({ ...entry, requestedAmountMinor: amount }));

    // Asked 2000, charged 2001: the provider's doing, and the engine parked it as it should.
    const providers = await check(fake, merchantId, { providerLedger: asked(2000) });
    expect(providers.violations).toEqual([]);
    expect(providers.parked).toEqual([expect.objectContaining({ key })]);
    // Asked 2001 for a request of 2000: the engine's doing.
    const engines = await check(fake, merchantId, { providerLedger: asked(2001) });
    expect(engines.violations).toEqual([expect.objectContaining({ kind: 'amount_mismatch' })]);
  });

  it('finds a provider charge nobody recorded', async () => {
    const provider = createFakeProvider();
    await provider.createCharge(
      {
        providerKey: 'co_unknown',
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c',
        amountMinor: 1,
        currency: 'NGN',
      },
      { signal: new AbortController().signal },
    );
    const report = await reconcile({ pool: db.pgPool, providerLedger: provider.ledger() });
    expect(report.violations).toContainEqual(
      expect.objectContaining({ kind: 'lost_charge', providerKey: 'co_unknown' }),
    );
  });

  it('with a merchant filter, judges unrecorded charges only when the ledger is theirs alone', async () => {
    const { provider } = await cleanRun('m_rec_stray');
    await provider.createCharge(
      {
        providerKey: 'co_stray',
        merchantId: 'm_test',
        chargeId: randomUUID(),
        customerId: 'c',
        amountMinor: 1,
        currency: 'NGN',
      },
      { signal: new AbortController().signal },
    );
    expect((await check(provider, 'm_rec_stray')).violations).toEqual([]);
    const report = await check(provider, 'm_rec_stray', { ledgerIsOnlyTheirs: true });
    expect(report.violations).toEqual([
      expect.objectContaining({ kind: 'lost_charge', providerKey: 'co_stray' }),
    ]);
  });

  it('finds a success the provider never made, and a differing amount', async () => {
    const { provider } = await cleanRun('m_rec_phantom');
    const ledger = provider.ledger();
    const report = await reconcile({
      pool: db.pgPool,
      merchantIds: ['m_rec_phantom'],
      providerLedger: [
        { ...ledger[0]!, amountMinor: 1999 },
        ledger[1]!,
        // the third charge is missing from the provider's records
      ],
    });
    expect(report.violations.map((v) => v.kind).sort()).toEqual([
      'amount_mismatch',
      'phantom_charge',
    ]);
  });

  it('finds a stored outcome that disagrees with the provider', async () => {
    const { provider, outcomes } = await cleanRun('m_rec_outcome');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET status = 'declined'
      WHERE merchant_id = 'm_rec_outcome' AND id = ${outcomes[0]!.outcome.chargeId}::uuid`);
    const report = await check(provider, 'm_rec_outcome');
    expect(report.violations.map((v) => v.kind)).toContain('outcome_mismatch');
  });

  it('finds unfinished keys once everything should be finished', async () => {
    const provider = createFakeProvider();
    await seedAbandonedKeys(db.pool, db.tables, 2, aRequest({ merchantId: 'm_rec_unfinished' }));
    expect((await check(provider, 'm_rec_unfinished')).violations).toEqual([]);
    const report = await check(provider, 'm_rec_unfinished', { expectFinished: true });
    expect(report.violations.map((v) => v.kind)).toEqual(['unfinished_key', 'unfinished_key']);
  });

  it('finds a replay that differs from the first answer', async () => {
    const { provider, outcomes } = await cleanRun('m_rec_replay');
    const { key, outcome } = outcomes[0]!;
    const report = await check(provider, 'm_rec_replay', {
      observations: [{ merchantId: 'm_rec_replay', key, body: outcome.body.replace('NGN', 'USD') }],
    });
    expect(report.violations).toEqual([expect.objectContaining({ kind: 'replay_mismatch', key })]);
  });

  it('finds answers that differ under a key reaped to a tombstone, by comparing them', async () => {
    const { provider, engine, outcomes } = await cleanRun('m_rec_reaped');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET completed_at = now() - interval '10 days'
      WHERE merchant_id = 'm_rec_reaped'`);
    // Past the 72 h retention, within the 30-day tombstones: the keys stay, their bodies go.
    expect(await engine.reap()).toBe(3);
    const [same, differs] = outcomes;
    const seen = (o: (typeof outcomes)[number], body = o.outcome.body) => ({
      merchantId: 'm_rec_reaped',
      key: o.key,
      body,
    });

    const report = await check(provider, 'm_rec_reaped', {
      observations: [
        seen(same!),
        seen(same!),
        seen(differs!),
        seen(differs!, `${differs!.outcome.body}\n`),
      ],
    });
    expect(report.violations).toEqual([
      expect.objectContaining({ kind: 'replay_mismatch', key: differs!.key }),
    ]);
  });
});
