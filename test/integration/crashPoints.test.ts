import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  CRASH_POINTS,
  IdempotencyKeyInUseError,
  SimulatedCrashError,
  type ChargeHooks,
  type CrashPoint,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, expireLease, readCharges, readKey } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`CREATE TABLE paid_orders (key text PRIMARY KEY)`);
});
afterAll(async () => {
  await db.drop();
});

const zKey = z.object({ key: z.string() });

/** Where the key must be after a crash at each point, and whether the provider charged. */
const expected: Record<CrashPoint, { point: string; charged: boolean }> = {
  afterClaimCommit: { point: 'reserved', charged: false },
  afterReserveCommit: { point: 'reserved', charged: false },
  beforeProviderCall: { point: 'reserved', charged: false },
  afterProviderCall: { point: 'reserved', charged: true },
  beforeCompleteCommit: { point: 'reserved', charged: true },
  afterCompleteCommit: { point: 'completed', charged: true },
};

describe.each([false, true])('crash at every point (separateClaim: %s)', (separateClaim) => {
  it.each(CRASH_POINTS)(
    '%s: the attempt dies holding the key; the retry finishes once',
    async (crashAt) => {
      const merchantId = `m_crash_${crashAt}_${String(separateClaim)}`;
      const provider = createFakeProvider({ dedupe: false });
      const hooks: ChargeHooks = {
        complete: async (tx, ctx) => {
          await tx.query(sql.unsafe`INSERT INTO paid_orders (key) VALUES (${ctx.key})`);
        },
      };
      const dying = createChargeEngine({
        pool: db.pgPool,
        provider,
        hooks,
        separateClaim,
        faults: { shouldCrash: (point) => point === crashAt },
      });
      const healthy = createChargeEngine({ pool: db.pgPool, provider, hooks });
      const key = aKey();
      const request = aRequest({ merchantId });

      const crash = await dying.processCharge(key, request).catch((e: unknown) => e);

      expect(crash).toBeInstanceOf(SimulatedCrashError);
      expect((crash as SimulatedCrashError).point).toBe(crashAt);
      const row = await readKey(db.pool, db.tables, merchantId, key);
      const want =
        separateClaim && crashAt === 'afterClaimCommit' ? 'started' : expected[crashAt].point;
      expect(row?.recovery_point).toBe(want);
      expect(provider.ledger()).toHaveLength(expected[crashAt].charged ? 1 : 0);
      if (want !== 'completed') {
        // Process death releases nothing: the lease holds until it runs out.
        expect(row?.lock_token).not.toBeNull();
        await expect(healthy.processCharge(key, request)).rejects.toBeInstanceOf(
          IdempotencyKeyInUseError,
        );
        await expireLease(db.pool, db.tables, merchantId, key);
      }

      const retry = await healthy.processCharge(key, request);

      expect(retry.status).toBe('succeeded');
      expect(retry.replayed).toBe(want === 'completed');
      expect(provider.ledger()).toHaveLength(1);
      expect(retry.providerChargeId).toBe(provider.ledger()[0]?.id);
      expect(await readCharges(db.pool, db.tables, merchantId)).toEqual([
        expect.objectContaining({
          status: 'succeeded',
          provider_charge_id: retry.providerChargeId,
        }),
      ]);
      const paid = await db.pool.anyFirst(
        sql.type(zKey)`SELECT key FROM paid_orders WHERE key = ${key}`,
      );
      expect(paid).toEqual([key]);
    },
  );
});
