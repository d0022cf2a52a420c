import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  ProviderUnavailableError,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
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

  it('a charge made before charges recorded their operation belongs to the engine of its first refund', async () => {
    const merchantId = 'm_by_operation_legacy';
    const e = twoEngines();
    const charge = await e.subscriptions.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000 }),
    );
    // As a charge of a schema at version 12: no operation recorded.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET operation = NULL WHERE id = ${charge.chargeId}::uuid`);
    e.subscriptionProvider.failNextRefund('failAfterRefund');
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300 };
    expect(await answerOf(e.subscriptions.processRefund(key, request))).toBeInstanceOf(
      ProviderUnavailableError,
    );
    // The refund's claim gave the charge its engine's operation: the other sweeper leaves it.
    expect(await operationOf(charge.chargeId)).toBe('subscription');
    expect(await e.charges.sweep()).toMatchObject({ examined: 0 });
    expect(e.chargeProvider.calls.findRefund).toBe(0);
    expect(await e.subscriptions.sweep()).toMatchObject({ examined: 1, adopted: 1 });
    expect(await e.subscriptions.processRefund(key, request)).toMatchObject({
      status: 'succeeded',
      replayed: true,
    });
  });

  it("a retry of the other engine's unfinished refund is answered 409, its provider not asked", async () => {
    const merchantId = 'm_by_operation_retry';
    const e = twoEngines();
    const charge = await e.subscriptions.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000 }),
    );
    e.subscriptionProvider.failNextRefund('failAfterRefund');
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300 };
    expect(await answerOf(e.subscriptions.processRefund(key, request))).toBeInstanceOf(
      ProviderUnavailableError,
    );
    // The same key, sent to the engine of the other operation: its lease is free to take.
    expect(await answerOf(e.charges.processRefund(key, request))).toBeInstanceOf(
      IdempotencyKeyInUseError,
    );
    expect(e.chargeProvider.calls.findRefund + e.chargeProvider.calls.createRefund).toBe(0);
    // Its own engine takes it over and adopts the refund.
    expect(await e.subscriptions.processRefund(key, request)).toMatchObject({
      status: 'succeeded',
      replayed: false,
    });
    expect(e.subscriptionProvider.calls.createRefund).toBe(1);
  });
});
