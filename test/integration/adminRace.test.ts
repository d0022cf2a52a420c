import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  KeyNotResolvableError,
  type ChargeEngine,
  type ChargeHooks,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { failKey } from '../../src/store/failKey.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aGate, aRequest, seedAbandonedKeys, waitFor, waitingOnLocks } from '../support/charges.js';

// A database of its own: the sweeps here take every abandoned key they find.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`CREATE TABLE hook_log (key text NOT NULL, kind text NOT NULL)`);
});
afterAll(async () => {
  await db.drop();
});

const logging: ChargeHooks = {
  complete: async (tx, ctx) => {
    await tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, ctx.status]);
  },
  cancel: async (tx, ctx) => {
    await tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, 'cancelled']);
  },
};

const person = { actor: 'ops', reason: 'checked with the provider' };

/** Keys parked at `reserved`, as the sweeper parks them. */
async function parkedKeys(merchantId: string, count: number) {
  const seeds = await seedAbandonedKeys(db.pool, db.tables, count, aRequest({ merchantId }));
  await db.pool.query(sql.unsafe`
    UPDATE ${db.tables.keys} SET lock_token = NULL, locked_until = NULL
    WHERE merchant_id = ${merchantId}`);
  for (const seed of seeds) {
    const scoped = { merchantId, operation: 'charge', key: seed.key };
    const parked = await failKey(db.pool, db.tables, {
      ...scoped,
      lockToken: randomUUID(),
      reason: 'the provider could not answer',
    });
    expect(parked).toBe(true);
  }
  return seeds;
}

const stateRow = z.object({
  key: z.string(),
  recovery_point: z.string(),
  response_body: z.string().nullable(),
  charge_status: z.string(),
  audit: z.array(z.string()),
  hooks: z.array(z.string()),
});

/** Per key: where it is, its charge, its audit rows and the hooks that committed for it. */
async function tablesOf(merchantId: string) {
  const rows = await db.pool.any(sql.type(stateRow)`
    SELECT k.key, k.recovery_point, k.response_body, c.status AS charge_status,
      ARRAY(SELECT a.action || ':' || a.result FROM ${db.tables.adminActions} a
        WHERE a.merchant_id = k.merchant_id AND a.key = k.key ORDER BY a.id) AS audit,
      ARRAY(SELECT h.kind FROM hook_log h WHERE h.key = k.key ORDER BY h.kind) AS hooks
    FROM ${db.tables.keys} k
    JOIN ${db.tables.charges} c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE k.merchant_id = ${merchantId}`);
  return new Map(rows.map((row) => [row.key, row]));
}

describe('resolve races', () => {
  it('a second resolve, a requeue and a sweeper wait on the first resolve, then find the key completed', async () => {
    const merchantId = 'm_race_held';
    const [seed] = await parkedKeys(merchantId, 1);
    const key = seed!.key;
    const gate = aGate();
    let hookStarted = false;
    const slow = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        complete: async (tx, ctx) => {
          await logging.complete?.(tx, ctx);
          hookStarted = true;
          // Held inside the resolve's transaction: the key's row stays locked meanwhile.
          await gate.wait();
        },
      },
    });
    const others = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: logging,
      sweepGraceMs: 0,
    });
    try {
      const first = slow.resolve({
        merchantId,
        key,
        outcome: 'succeeded',
        providerChargeId: 'ch_first',
        ...person,
      });
      await waitFor(() => Promise.resolve(hookStarted));
      const second = others
        .resolve({ merchantId, key, outcome: 'cancelled', ...person })
        .catch((error: unknown) => error);
      const requeued = others.requeue({ merchantId, key, ...person });
      // Both are queued on the row lock before the first commits.
      await waitFor(async () => (await waitingOnLocks(db.pool)) >= 2);
      const swept = await others.sweep();
      gate.open();

      expect((await first).outcome.status).toBe('succeeded');
      expect(await second).toBeInstanceOf(KeyNotResolvableError);
      expect(await second).toMatchObject({ reason: 'completed' });
      expect(await requeued).toBe(false);
      expect(swept.examined).toBe(0);
    } finally {
      gate.open();
      await slow.close();
      await others.close();
    }
    const state = (await tablesOf(merchantId)).get(key);
    expect(state).toMatchObject({
      recovery_point: 'completed',
      charge_status: 'succeeded',
      audit: ['resolve:succeeded'],
      hooks: ['succeeded'],
    });
  });

  it('resolves, requeues and sweeps all at once: one wins per key, nothing is written twice', async () => {
    const merchantId = 'm_race_free';
    const provider = createFakeProvider();
    const engine: ChargeEngine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: logging,
      sweepGraceMs: 0,
    });
    const seeds = await parkedKeys(merchantId, 12);
    try {
      const perKey = seeds.map(async ({ key }) => {
        const [succeeded, cancelled, requeued] = await Promise.all([
          engine
            .resolve({
              merchantId,
              key,
              outcome: 'succeeded',
              providerChargeId: `ch_${key}`,
              ...person,
            })
            .then(() => true, refused),
          engine
            .resolve({ merchantId, key, outcome: 'cancelled', ...person })
            .then(() => true, refused),
          engine.requeue({ merchantId, key, ...person }),
        ]);
        return { key, succeeded, cancelled, requeued };
      });
      const [results] = await Promise.all([Promise.all(perKey), engine.sweep(), engine.sweep()]);
      // Whatever a requeue put back, a last sweep finishes (the provider has no charge: cancel).
      await engine.sweep();

      const tables = await tablesOf(merchantId);
      for (const result of results) {
        const state = tables.get(result.key)!;
        const winners = [result.succeeded, result.cancelled, result.requeued].filter(Boolean);
        expect(winners).toHaveLength(1);
        expect(state.recovery_point).toBe('completed');
        const status = (JSON.parse(state.response_body!) as { status: string }).status;
        expect(state.charge_status).toBe(status);
        // One terminal hook, from whoever completed the key.
        expect(state.hooks).toEqual([status]);
        if (result.succeeded) {
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
      expect(provider.ledger()).toHaveLength(0);
    } finally {
      await engine.close();
    }
  });
});

/** A resolve refused because another action won: false; anything else is a failure. */
function refused(error: unknown): false {
  if (error instanceof KeyNotResolvableError) return false;
  throw error;
}
