import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  type ChargeEngine,
  type ChargeEngineOptions,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aGate, aKey, aRequest, waitFor, waitingOnLocks } from '../support/charges.js';
import { readStoredCharge } from '../support/readStoreBooks.js';

// A refund or capture asked while another movement (or the charge itself) holds its charge's
// row waits for it, and is decided, and told why when refused, on the row as that one left it,
// not as it stood when its own claim began.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 10 });
});
afterAll(async () => {
  await db.drop();
});

/**
 * An engine whose hook (`holdIn`) holds the charge's row the first time it runs, until the
 * returned gate opens; `held()` says whether it is holding yet.
 */
function engineHolding(holdIn: (hold: () => Promise<void>) => ChargeEngineOptions['hooks']) {
  const gate = aGate();
  let holding = false;
  const hold = async () => {
    if (holding) return;
    holding = true;
    await gate.wait();
  };
  const provider = createFakeProvider();
  const engine = createChargeEngine({ pool: db.pgPool, provider, hooks: holdIn(hold) });
  return { engine, provider, gate, held: () => Promise.resolve(holding) };
}

/** An authorization of 1000 (captured later, or not): its charge id. */
async function anAuthorization(engine: ChargeEngine, merchantId: string): Promise<string> {
  const auth = await engine.processCharge(
    aKey(),
    aRequest({ merchantId, amountMinor: 1000, capture: false }),
  );
  return auth.chargeId;
}

/** Until another statement waits on the row the hook holds. */
const someoneWaits = () => waitFor(async () => (await waitingOnLocks(db.pool)) > 0);

const refusalOf = (body: string) => (JSON.parse(body) as { refusal?: string }).refusal;

describe('a movement asked while its charge is held', () => {
  it('a capture that lost the authorization to another is told charge_not_capturable, and replays it', async () => {
    const { engine, gate, held } = engineHolding((hold) => ({ capture: { reserve: hold } }));
    const merchantId = 'm_refusal_capture_race';
    const chargeId = await anAuthorization(engine, merchantId);
    const capture = (key: string) =>
      engine.processCapture(key, { merchantId, chargeId, amountMinor: 500 });

    const winner = capture(aKey());
    await waitFor(held);
    const loserKey = aKey();
    const loser = capture(loserKey);
    await someoneWaits();
    gate.open();

    expect((await winner).status).toBe('succeeded');
    const refused = await loser;
    expect(refused.status).toBe('refused');
    // 500 is within the 1000 authorized: it was taken, not exceeded.
    expect(refusalOf(refused.body)).toBe('charge_not_capturable');
    expect((await capture(loserKey)).body).toBe(refused.body);
  });

  it('a capture asked while another that failed at the provider completes gets the authorization back', async () => {
    const { engine, provider, gate, held } = engineHolding((hold) => ({
      capture: { complete: hold },
    }));
    const merchantId = 'm_refusal_capture_given_back';
    const chargeId = await anAuthorization(engine, merchantId);
    provider.failNextCapture('failCapture');

    const failing = engine.processCapture(aKey(), { merchantId, chargeId, amountMinor: 500 });
    await waitFor(held);
    const next = engine.processCapture(aKey(), { merchantId, chargeId, amountMinor: 500 });
    await someoneWaits();
    gate.open();

    expect((await failing).status).toBe('failed');
    // Judged on the row as the failed capture left it: nothing held, nothing captured.
    expect((await next).status).toBe('succeeded');
  });

  it('a refund asked while a capture commits is told exceeds_refundable once it is captured', async () => {
    const { engine, gate, held } = engineHolding((hold) => ({ capture: { complete: hold } }));
    const merchantId = 'm_refusal_refund_vs_capture';
    const chargeId = await anAuthorization(engine, merchantId);

    const capturing = engine.processCapture(aKey(), { merchantId, chargeId, amountMinor: 600 });
    await waitFor(held);
    const refunding = engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 700 });
    await someoneWaits();
    gate.open();

    expect((await capturing).status).toBe('succeeded');
    const refund = await refunding;
    expect(refund.status).toBe('refused');
    // Captured 600 by then: 700 exceeds what can be refunded; it is no longer "not captured".
    expect(refusalOf(refund.body)).toBe('exceeds_refundable');
  });

  it('a refund within what a capture committing meanwhile captures is reserved, not failed by a check', async () => {
    const { engine, gate, held } = engineHolding((hold) => ({ capture: { complete: hold } }));
    const merchantId = 'm_refusal_refund_within_capture';
    const chargeId = await anAuthorization(engine, merchantId);

    const capturing = engine.processCapture(aKey(), { merchantId, chargeId, amountMinor: 600 });
    await waitFor(held);
    // Its statement starts while nothing is captured yet, and waits for the capture's commit:
    // the row it writes must be made from the captured charge (PostgreSQL checks the row made
    // from the older version first, where 100 more refunded exceeded the 0 captured).
    const refunding = engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 100 });
    await someoneWaits();
    gate.open();

    expect((await capturing).status).toBe('succeeded');
    expect((await refunding).status).toBe('succeeded');
    const charge = await readStoredCharge(db.pool, db.tables, merchantId, chargeId);
    expect(charge).toMatchObject({
      capturedMinor: 600,
      refundedMinor: 100,
      refundReservedMinor: 0,
    });
  });

  it('a refund asked while its charge completes is judged on the completed charge', async () => {
    const { engine, gate, held } = engineHolding((hold) => ({ complete: hold }));
    const merchantId = 'm_refusal_refund_vs_charge';
    const key = aKey();

    const charging = engine.processCharge(key, aRequest({ merchantId, amountMinor: 1000 }));
    await waitFor(held);
    const chargeId = await db.pool.oneFirst(sql.type(z.object({ charge_id: z.string() }))`
      SELECT charge_id::text FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${key}`);
    const refunding = engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 100 });
    await someoneWaits();
    gate.open();

    expect((await charging).status).toBe('succeeded');
    expect((await refunding).status).toBe('succeeded');
  });
});
