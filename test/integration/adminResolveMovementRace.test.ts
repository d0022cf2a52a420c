import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  KeyNotResolvableError,
  ProviderAnswerInvalidError,
  type ChargeEngine,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { withWrongMovementAnswers } from '../support/wrongMovementAnswers.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, waitFor, waitingOnLocks } from '../support/charges.js';

// A database of its own: the sweeps here take every abandoned key they find.
let db: TestDatabase;
let engine: ChargeEngine;
const fake = createFakeProvider();
/** While set, a refund gets an answer for another amount (nothing recorded): the key is parked. */
let answerWrongly = false;

const provider = withWrongMovementAnswers(fake, () => answerWrongly);

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
});
afterAll(async () => {
  await engine.close();
  await db.drop();
});

const person = { actor: 'ops', reason: 'checked with the provider' };

/** `count` refunds of 100 each on one charge of 10 000, every one parked. */
async function parkedRefunds(merchantId: string, count: number) {
  const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 10_000 }));
  const keys: string[] = [];
  answerWrongly = true;
  try {
    for (let i = 0; i < count; i++) {
      const key = aKey();
      await expect(
        engine.processRefund(key, { merchantId, chargeId: charge.chargeId, amountMinor: 100 }),
      ).rejects.toBeInstanceOf(ProviderAnswerInvalidError);
      keys.push(key);
    }
  } finally {
    answerWrongly = false;
  }
  return { chargeId: charge.chargeId, keys };
}

const totalsRow = z.object({ refund_reserved_minor: z.number(), refunded_minor: z.number() });

async function chargeTotals(chargeId: string) {
  return db.pool.one(sql.type(totalsRow)`
    SELECT refund_reserved_minor::float8 AS refund_reserved_minor,
      refunded_minor::float8 AS refunded_minor
    FROM ${db.tables.charges} WHERE id = ${chargeId}::uuid`);
}

const stateRow = z.object({
  key: z.string(),
  recovery_point: z.string(),
  response_body: z.string().nullable(),
  movement_status: z.string(),
  audit: z.array(z.string()),
});

/** Per key: where it is, its movement, and its audit rows. */
async function keysOf(merchantId: string) {
  const rows = await db.pool.any(sql.type(stateRow)`
    SELECT k.key, k.recovery_point, k.response_body, m.status AS movement_status,
      ARRAY(SELECT a.action || ':' || a.result FROM ${db.tables.adminActions} a
        WHERE a.merchant_id = k.merchant_id AND a.key = k.key ORDER BY a.id) AS audit
    FROM ${db.tables.keys} k
    JOIN ${db.tables.movements} m ON m.merchant_id = k.merchant_id AND m.id = k.charge_id
    WHERE k.merchant_id = ${merchantId} AND k.operation = 'refund'`);
  return new Map(rows.map((row) => [row.key, row]));
}

/** A resolve refused because another action won: false; anything else is a failure. */
function refused(error: unknown): false {
  if (error instanceof KeyNotResolvableError) return false;
  throw error;
}

describe('resolve races on refund keys', () => {
  it('two resolves queued on the same parked refund: one wins, the refund is counted once', async () => {
    const merchantId = 'm_rmr_queued';
    const { chargeId, keys } = await parkedRefunds(merchantId, 1);
    const key = keys[0]!;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = false;
    // Another transaction holds the key's row, so both resolves are queued on its lock.
    const holder = db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`
        SELECT 1 FROM ${db.tables.keys}
        WHERE merchant_id = ${merchantId} AND operation = 'refund' AND key = ${key} FOR UPDATE`);
      locked = true;
      await released;
    });
    await waitFor(() => Promise.resolve(locked));
    const resolve = (outcome: 'succeeded' | 'cancelled') =>
      engine
        .resolve({
          merchantId,
          key,
          operation: 'refund',
          outcome,
          ...(outcome === 'succeeded' ? { providerRefundId: 're_race' } : {}),
          ...person,
        })
        .then((result) => result.outcome.status, refused);
    const first = resolve('succeeded');
    const second = resolve('cancelled');
    await waitFor(async () => (await waitingOnLocks(db.pool)) >= 2);
    release();
    await holder;

    const outcomes = await Promise.all([first, second]);

    expect(outcomes.filter((o) => o !== false)).toHaveLength(1);
    const winner = outcomes.find((o) => o !== false);
    const state = (await keysOf(merchantId)).get(key)!;
    expect(state.audit).toEqual([`resolve:${winner as string}`]);
    expect(state.movement_status).toBe(winner);
    expect(await chargeTotals(chargeId)).toEqual({
      refund_reserved_minor: 0,
      refunded_minor: winner === 'succeeded' ? 100 : 0,
    });
  });

  it('resolves, requeues and sweeps all at once: one wins per key, totals written once', async () => {
    const merchantId = 'm_rmr_free';
    const { chargeId, keys } = await parkedRefunds(merchantId, 12);
    expect(await chargeTotals(chargeId)).toEqual({
      refund_reserved_minor: 1200,
      refunded_minor: 0,
    });

    const perKey = keys.map(async (key) => {
      const target = { merchantId, key, operation: 'refund' as const, ...person };
      const [succeeded, cancelled, requeued] = await Promise.all([
        engine
          .resolve({ ...target, outcome: 'succeeded', providerRefundId: `re_${key}` })
          .then(() => true, refused),
        engine.resolve({ ...target, outcome: 'cancelled' }).then(() => true, refused),
        engine.requeue(target),
      ]);
      return { key, succeeded, cancelled, requeued };
    });
    const [results] = await Promise.all([Promise.all(perKey), engine.sweep(), engine.sweep()]);
    // Whatever a requeue put back, a last sweep finishes (the provider has no refund: cancel).
    await engine.sweep();

    const states = await keysOf(merchantId);
    let succeeded = 0;
    for (const result of results) {
      const state = states.get(result.key)!;
      expect([result.succeeded, result.cancelled, result.requeued].filter(Boolean)).toHaveLength(1);
      expect(state.recovery_point).toBe('completed');
      const status = (JSON.parse(state.response_body!) as { status: string }).status;
      expect(state.movement_status).toBe(status);
      if (result.succeeded) {
        succeeded += 1;
        expect(state.audit).toEqual(['resolve:succeeded']);
        expect(status).toBe('succeeded');
      } else if (result.cancelled) {
        expect(state.audit).toEqual(['resolve:cancelled']);
        expect(status).toBe('cancelled');
      } else {
        // Requeued, then cancelled by a sweeper that found nothing at the provider.
        expect(state.audit).toEqual(['requeue:reserved']);
        expect(status).toBe('cancelled');
      }
    }
    expect(await chargeTotals(chargeId)).toEqual({
      refund_reserved_minor: 0,
      refunded_minor: 100 * succeeded,
    });
    expect(fake.refundLedger()).toHaveLength(0);
  });
});
