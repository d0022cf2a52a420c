import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createChargeEngine, ProviderUnavailableError } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { loadMigrations } from '../../src/store/migrate.js';
import { rawSql } from '../../src/store/rawSql.js';
import { aKey, answerOf, aRequest } from '../support/charges.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

// Engines of two operations share one schema, each with its own provider. A charge's refunds and
// captures belong to the engine of its operation: another engine's provider never made them.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** Engine `charge` on one provider, engine `subscription` on another, one schema. */
function twoEngines() {
  const chargeProvider = createFakeProvider();
  const subscriptionProvider = createFakeProvider();
  const charges = createChargeEngine({
    pool: db.pgPool,
    provider: chargeProvider,
    sweepGraceMs: 0,
  });
  const subscriptions = createChargeEngine({
    pool: db.pgPool,
    provider: subscriptionProvider,
    operation: 'subscription',
    sweepGraceMs: 0,
  });
  return { charges, subscriptions, chargeProvider, subscriptionProvider };
}

const operationRow = z.object({ operation: z.string().nullable() });

async function operationOf(chargeId: string): Promise<string | null> {
  return db.pool.oneFirst(sql.type(operationRow)`
    SELECT operation FROM ${db.tables.charges} WHERE id = ${chargeId}::uuid`);
}

describe('a charge records its operation', () => {
  it('alone, in a group commit, and through a separate claim', async () => {
    const merchantId = 'm_by_operation_written';
    const provider = createFakeProvider();
    const grouped = createChargeEngine({ pool: db.pgPool, provider, operation: 'subscription' });
    const separate = createChargeEngine({
      pool: db.pgPool,
      provider,
      operation: 'invoice',
      separateClaim: true,
    });
    const alone = await grouped.processCharge(aKey(), aRequest({ merchantId }));
    const together = await Promise.all(
      Array.from({ length: 8 }, () => grouped.processCharge(aKey(), aRequest({ merchantId }))),
    );
    const apart = await separate.processCharge(aKey(), aRequest({ merchantId }));
    for (const { chargeId } of [alone, ...together]) {
      expect(await operationOf(chargeId)).toBe('subscription');
    }
    expect(await operationOf(apart.chargeId)).toBe('invoice');
  });
});

describe("a refund left unfinished by one operation's engine", () => {
  it("is left alone by another operation's sweeper, and adopted by its own", async () => {
    const merchantId = 'm_by_operation_sweep';
    const e = twoEngines();
    const charge = await e.subscriptions.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000 }),
    );
    expect(await operationOf(charge.chargeId)).toBe('subscription');
    // The provider refunds; its answer is lost: the key stays reserved, its lease given back.
    e.subscriptionProvider.failNextRefund('failAfterRefund');
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 1000 };
    expect(await answerOf(e.subscriptions.processRefund(key, request))).toBeInstanceOf(
      ProviderUnavailableError,
    );

    // The other engine's sweep does not take it (its provider would find nothing, and cancel).
    expect(await e.charges.sweep()).toMatchObject({ examined: 0, cancelled: 0 });
    expect(e.chargeProvider.calls.findRefund).toBe(0);

    expect(await e.subscriptions.sweep()).toMatchObject({ examined: 1, adopted: 1 });
    const replayed = await e.subscriptions.processRefund(key, request);
    expect(replayed).toMatchObject({ status: 'succeeded', replayed: true });
    const seen = await e.subscriptions.inspect({ merchantId, key, operation: 'refund' });
    expect(seen?.movement?.chargeTotals).toMatchObject({
      refundedMinor: 1000,
      refundReservedMinor: 0,
    });
  });
});

describe("a refund or capture asked of another operation's engine", () => {
  it('is refused as charge_not_found, its provider never asked', async () => {
    const merchantId = 'm_by_operation_claim';
    const e = twoEngines();
    const charge = await e.subscriptions.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000 }),
    );
    const refund = await e.charges.processRefund(aKey(), {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 400,
    });
    expect(refund).toMatchObject({ status: 'refused', httpStatus: 422 });
    expect(JSON.parse(refund.body)).toMatchObject({ refusal: 'charge_not_found' });
    const auth = await e.subscriptions.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const capture = await e.charges.processCapture(aKey(), { merchantId, chargeId: auth.chargeId });
    expect(JSON.parse(capture.body)).toMatchObject({ refusal: 'charge_not_found' });
    expect(e.chargeProvider.calls.createRefund + e.chargeProvider.calls.capture).toBe(0);

    // Its own engine refunds and captures it.
    const own = await e.subscriptions.processRefund(aKey(), {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 400,
    });
    expect(own).toMatchObject({ status: 'succeeded' });
    const captured = await e.subscriptions.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
    });
    expect(captured).toMatchObject({ status: 'succeeded' });
  });

  it('goes through for a charge made before charges recorded their operation', async () => {
    const merchantId = 'm_by_operation_legacy';
    const e = twoEngines();
    // One provider for both here: a charge of old, which either engine may move.
    const shared = createChargeEngine({
      pool: db.pgPool,
      provider: e.chargeProvider,
      operation: 'subscription',
    });
    const charge = await shared.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET operation = NULL WHERE id = ${charge.chargeId}::uuid`);
    e.chargeProvider.failNextRefund('failAfterRefund');
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300 };
    expect(await answerOf(e.charges.processRefund(key, request))).toBeInstanceOf(
      ProviderUnavailableError,
    );
    expect(await e.charges.sweep()).toMatchObject({ examined: 1, adopted: 1 });
    expect(await e.charges.processRefund(key, request)).toMatchObject({
      status: 'succeeded',
      replayed: true,
    });
  });
});

describe("migration 13's backfill", () => {
  it("sets each charge's operation from its key, and leaves a charge without one null", async () => {
    const merchantId = 'm_by_operation_backfill';
    const e = twoEngines();
    const ofCharges = await e.charges.processCharge(aKey(), aRequest({ merchantId }));
    const ofSubscriptions = await e.subscriptions.processCharge(aKey(), aRequest({ merchantId }));
    await e.subscriptions.processRefund(aKey(), {
      merchantId,
      chargeId: ofSubscriptions.chargeId,
      amountMinor: 100,
    });
    const orphanKey = aKey();
    const orphan = await e.charges.processCharge(orphanKey, aRequest({ merchantId }));
    await db.pool.query(sql.unsafe`
      DELETE FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${orphanKey}`);
    // As a schema at version 12 had them: no operation on any charge.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET operation = NULL WHERE merchant_id = ${merchantId}`);

    const migration = (await loadMigrations()).find((m) => m.version === 13)!;
    const backfill = migration.statements.filter((s) => /^\s*(--.*\n\s*)*UPDATE/.test(s));
    expect(backfill).toHaveLength(1);
    await db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT set_config('search_path', ${db.tables.schema}, true)`);
      await tx.query(sql.unsafe(rawSql(backfill[0]!)));
    });

    expect(await operationOf(ofCharges.chargeId)).toBe('charge');
    expect(await operationOf(ofSubscriptions.chargeId)).toBe('subscription');
    expect(await operationOf(orphan.chargeId)).toBeNull();
  });
});
