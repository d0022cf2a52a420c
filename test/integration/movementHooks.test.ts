import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from 'slonik';
import {
  ChargeRejectedError,
  createChargeEngine,
  type MovementHookContext,
  type MovementHooks,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  // The caller's own table, written by the hooks: one row per refund or capture key.
  await db.pool.query(sql.unsafe`
    CREATE TABLE order_moves (key text PRIMARY KEY, state text NOT NULL, movement_id uuid,
      amount_minor int4)`);
});
afterAll(async () => {
  await db.drop();
});

async function moveState(key: string): Promise<string | null> {
  return db.pool.maybeOneFirst(
    sql.type(z.object({ state: z.string() }))`SELECT state FROM order_moves WHERE key = ${key}`,
  );
}

async function chargeTotals(chargeId: string) {
  return db.pool.one(sql.type(
    z.object({
      refund_reserved_minor: z.number(),
      refunded_minor: z.number(),
      captured_minor: z.number().nullable(),
      capture_reserved_minor: z.number().nullable(),
    }),
  )`
    SELECT refund_reserved_minor::float8 AS refund_reserved_minor,
      refunded_minor::float8 AS refunded_minor, captured_minor::float8 AS captured_minor,
      capture_reserved_minor::float8 AS capture_reserved_minor
    FROM ${db.tables.charges} WHERE id = ${chargeId}::uuid`);
}

async function keyCount(merchantId: string, operation: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.keys}
    WHERE merchant_id = ${merchantId} AND operation = ${operation}`);
}

const writing: MovementHooks = {
  reserve: async (tx, ctx) => {
    await tx.query(sql.unsafe`
      INSERT INTO order_moves (key, state, movement_id, amount_minor)
      VALUES (${ctx.key}, 'held', ${ctx.movementId}::uuid, ${ctx.amountMinor})`);
  },
  complete: async (tx, ctx) => {
    await tx.query(sql.unsafe`UPDATE order_moves SET state = ${ctx.status} WHERE key = ${ctx.key}`);
  },
  cancel: async (tx, ctx) => {
    await tx.query(sql.unsafe`UPDATE order_moves SET state = 'released' WHERE key = ${ctx.key}`);
  },
};

describe('hooks of refunds and captures run inside their phase transactions', () => {
  it('a refund: reserve with the claim, complete with the provider answer; the context names the movement', async () => {
    const seen: MovementHookContext[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        refund: {
          ...writing,
          complete: async (tx, ctx) => {
            seen.push(ctx);
            await writing.complete!(tx, ctx);
          },
        },
      },
    });
    const merchantId = 'm_mh_refund';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 900 }));
    const key = aKey();
    const refund = await engine.processRefund(key, {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 300,
      reason: 'damaged',
    });

    expect(refund.status).toBe('succeeded');
    expect(await moveState(key)).toBe('succeeded');
    expect(seen).toEqual([
      expect.objectContaining({
        merchantId,
        operation: 'refund',
        key,
        movementId: refund.refundId,
        chargeId: charge.chargeId,
        amountMinor: 300,
        currency: 'NGN',
        reason: 'damaged',
        status: 'succeeded',
        providerMovementId: refund.providerRefundId,
        adopted: false,
      }),
    ]);
  });

  it('a reserve hook that throws rolls the claim back: no key, nothing held, the key usable again', async () => {
    const provider = createFakeProvider();
    const merchantId = 'm_mh_throw';
    const plain = createChargeEngine({ pool: db.pgPool, provider });
    const charge = await plain.processCharge(aKey(), aRequest({ merchantId, amountMinor: 500 }));
    const failing = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        refund: {
          reserve: async (tx, ctx) => {
            await writing.reserve!(tx, ctx);
            throw new Error('ledger service down');
          },
        },
      },
    });
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 500 };

    await expect(failing.processRefund(key, request)).rejects.toThrow('ledger service down');
    expect(await keyCount(merchantId, 'refund')).toBe(0);
    expect(await moveState(key)).toBeNull();
    expect(await chargeTotals(charge.chargeId)).toMatchObject({ refund_reserved_minor: 0 });
    expect(provider.calls.createRefund).toBe(0);

    const retried = await plain.processRefund(key, request);
    expect(retried.status).toBe('succeeded');
  });

  it('a reserve hook rejecting: stored refused with its response, its writes undone, the reservation given back', async () => {
    const provider = createFakeProvider();
    const merchantId = 'm_mh_reject';
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        refund: {
          reserve: async (tx, ctx) => {
            await writing.reserve!(tx, ctx);
            if (ctx.amountMinor > 100) {
              throw new ChargeRejectedError(409, '{"error":"order_already_shipped"}');
            }
          },
        },
      },
    });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 500 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 400 };

    const first = await engine.processRefund(key, request);
    const replay = await engine.processRefund(key, request);
    const small = await engine.processRefund(aKey(), { ...request, amountMinor: 100 });

    expect(first).toMatchObject({
      status: 'refused',
      httpStatus: 409,
      body: '{"error":"order_already_shipped"}',
      replayed: false,
    });
    expect(replay).toMatchObject({ status: 'refused', httpStatus: 409, replayed: true });
    expect(replay.body).toBe(first.body);
    expect(await moveState(key)).toBeNull();
    expect(small.status).toBe('succeeded');
    expect(provider.calls.createRefund).toBe(1);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 100,
    });
  });

  it('a complete hook that throws: nothing recorded, the amount stays held; a retry adopts the refund once', async () => {
    const provider = createFakeProvider();
    const merchantId = 'm_mh_complete';
    let failComplete = true;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        refund: {
          ...writing,
          complete: async (tx, ctx) => {
            await writing.complete!(tx, ctx);
            if (failComplete) throw new Error('ledger write refused');
          },
        },
      },
    });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 800 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 800 };

    await expect(engine.processRefund(key, request)).rejects.toThrow('ledger write refused');
    expect(await moveState(key)).toBe('held');
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 800,
      refunded_minor: 0,
    });

    failComplete = false;
    const retried = await engine.processRefund(key, request);
    expect(retried.status).toBe('succeeded');
    expect(await moveState(key)).toBe('succeeded');
    expect(provider.calls.createRefund).toBe(1);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 800,
    });
  });

  it('the sweeper cancelling a refund the provider never made runs the cancel hook in its commit', async () => {
    const provider = createFakeProvider();
    const merchantId = 'm_mh_cancel';
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      sweepGraceMs: 0,
      hooks: { refund: writing },
    });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 600 }));
    const key = aKey();
    provider.failNextRefund('failBeforeRefund');
    await expect(
      engine.processRefund(key, { merchantId, chargeId: charge.chargeId, amountMinor: 600 }),
    ).rejects.toThrow();
    expect(await moveState(key)).toBe('held');

    const swept = await engine.sweep();
    expect(swept).toMatchObject({ cancelled: 1 });
    expect(await moveState(key)).toBe('released');
    expect(await chargeTotals(charge.chargeId)).toMatchObject({ refund_reserved_minor: 0 });
  });

  it("a capture's hooks, and a refusal of chargeonce's runs none", async () => {
    const calls: string[] = [];
    const recording: MovementHooks = {
      reserve: async (tx, ctx) => {
        calls.push(`reserve ${ctx.operation} ${ctx.amountMinor}`);
        await writing.reserve!(tx, ctx);
      },
      complete: async (tx, ctx) => {
        calls.push(`complete ${ctx.operation} ${ctx.status}`);
        await writing.complete!(tx, ctx);
      },
    };
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: { capture: recording, refund: recording },
    });
    const merchantId = 'm_mh_capture';
    const charge = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 700, capture: false }),
    );
    const captureKey = aKey();
    const captured = await engine.processCapture(captureKey, {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 650,
    });
    const second = await engine.processCapture(aKey(), { merchantId, chargeId: charge.chargeId });
    const tooMuch = await engine.processRefund(aKey(), {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 651,
    });

    expect(captured.status).toBe('succeeded');
    expect(second).toMatchObject({ status: 'refused' });
    expect(tooMuch).toMatchObject({ status: 'refused' });
    expect(calls).toEqual(['reserve capture 650', 'complete capture succeeded']);
    expect(await moveState(captureKey)).toBe('succeeded');
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      captured_minor: 650,
      capture_reserved_minor: null,
    });
  });
});
