import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, waitFor } from '../support/charges.js';

// A refund or capture refused because another movement got to its charge first is told why as
// the charge stands once that one committed, not as it stood when the refused claim began.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 10 });
});
afterAll(async () => {
  await db.drop();
});

/** A promise a hook waits on, and the function that lets it go. */
function aGate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** True once a statement of this database waits on a row lock. */
async function someoneWaitsOnALock(): Promise<boolean> {
  const waiting = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`);
  return waiting > 0;
}

const refusalOf = (body: string) => (JSON.parse(body) as { refusal?: string }).refusal;

describe('a movement refused after another committed on its charge', () => {
  it('a capture that lost the authorization to another is told charge_not_capturable, and replays it', async () => {
    const gate = aGate();
    let first = true;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        capture: {
          // The first capture's claim holds the charge's row until its hook lets go.
          reserve: async () => {
            if (!first) return;
            first = false;
            await gate.opened;
          },
        },
      },
    });
    const merchantId = 'm_refusal_capture_race';
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const winner = engine.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 500,
    });
    await waitFor(() => Promise.resolve(!first));
    const loserKey = aKey();
    const loser = engine.processCapture(loserKey, {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 500,
    });
    await waitFor(someoneWaitsOnALock);
    gate.open();

    expect((await winner).status).toBe('succeeded');
    const refused = await loser;
    expect(refused.status).toBe('refused');
    // 500 is within the 1000 authorized: it was taken, not exceeded.
    expect(refusalOf(refused.body)).toBe('charge_not_capturable');
    const again = await engine.processCapture(loserKey, {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 500,
    });
    expect(again.body).toBe(refused.body);
  });

  it('a capture asked while another that failed at the provider completes gets the authorization back', async () => {
    const gate = aGate();
    let completing = false;
    const provider = createFakeProvider();
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        capture: {
          // The failed capture's completion holds the charge's row until its hook lets go.
          complete: async () => {
            if (completing) return;
            completing = true;
            await gate.opened;
          },
        },
      },
    });
    const merchantId = 'm_refusal_capture_given_back';
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    provider.failNextCapture('failCapture');
    const failing = engine.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 500,
    });
    await waitFor(() => Promise.resolve(completing));
    const next = engine.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 500,
    });
    await waitFor(someoneWaitsOnALock);
    gate.open();

    expect((await failing).status).toBe('failed');
    // Judged on the row as the failed capture left it: nothing held, nothing captured.
    expect((await next).status).toBe('succeeded');
  });

  it('a refund asked while its charge completes is judged on the completed charge', async () => {
    const gate = aGate();
    let completing = false;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        // The charge's completion holds its row until the hook lets go.
        complete: async () => {
          completing = true;
          await gate.opened;
        },
      },
    });
    const merchantId = 'm_refusal_refund_vs_charge';
    const key = aKey();
    const charging = engine.processCharge(key, aRequest({ merchantId, amountMinor: 1000 }));
    await waitFor(() => Promise.resolve(completing));
    const chargeId = await db.pool.oneFirst(sql.type(z.object({ charge_id: z.string() }))`
      SELECT charge_id::text FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${key}`);
    const refunding = engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 100 });
    await waitFor(someoneWaitsOnALock);
    gate.open();

    expect((await charging).status).toBe('succeeded');
    expect((await refunding).status).toBe('succeeded');
  });

  it('a refund asked while a capture commits is told exceeds_refundable once it is captured', async () => {
    const gate = aGate();
    let completing = false;
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        capture: {
          // The capture's completion holds the charge's row until its hook lets go.
          complete: async () => {
            completing = true;
            await gate.opened;
          },
        },
      },
    });
    const merchantId = 'm_refusal_refund_vs_capture';
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const capturing = engine.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 600,
    });
    await waitFor(() => Promise.resolve(completing));
    const refunding = engine.processRefund(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 700,
    });
    await waitFor(someoneWaitsOnALock);
    gate.open();

    expect((await capturing).status).toBe('succeeded');
    const refund = await refunding;
    expect(refund.status).toBe('refused');
    // Captured 600 by then: 700 exceeds what can be refunded; it is no longer "not captured".
    expect(refusalOf(refund.body)).toBe('exceeds_refundable');
  });
});
