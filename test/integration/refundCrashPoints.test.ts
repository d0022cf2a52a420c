import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  CRASH_POINTS,
  IdempotencyKeyInUseError,
  SimulatedCrashError,
  type CrashPoint,
  type PaymentProvider,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** Whether the provider has moved the money when an attempt dies at each point. */
const moved: Record<CrashPoint, boolean> = {
  afterClaimCommit: false,
  afterReserveCommit: false,
  beforeProviderCall: false,
  afterProviderCall: true,
  beforeCompleteCommit: true,
  afterCompleteCommit: true,
};

const keyRow = z.object({ recovery_point: z.string(), lock_token: z.string().nullable() });

async function readMovementKey(operation: string, merchantId: string, key: string) {
  return db.pool.maybeOne(sql.type(keyRow)`
    SELECT recovery_point, lock_token::text FROM ${db.tables.keys}
    WHERE merchant_id = ${merchantId} AND operation = ${operation} AND key = ${key}`);
}

/** The provider, counting the refunds and captures it really made (it does not dedupe). */
function countingProvider() {
  const fake = createFakeProvider({ dedupe: false });
  const made = { refunds: 0, captures: 0 };
  const provider: PaymentProvider = {
    createCharge: (input, opts) => fake.createCharge(input, opts),
    findCharge: (key, opts) => fake.findCharge(key, opts),
    createRefund: async (input, opts) => {
      const refund = await fake.createRefund(input, opts);
      made.refunds += 1;
      return refund;
    },
    findRefund: (key, opts) => fake.findRefund(key, opts),
    capture: async (input, opts) => {
      const captured = await fake.capture(input, opts);
      made.captures += 1;
      return captured;
    },
    findCapture: (input, opts) => fake.findCapture(input, opts),
  };
  return { provider, made };
}

describe.each(['refund', 'capture'] as const)('a %s crashing at every point', (kind) => {
  it.each(CRASH_POINTS)(
    '%s: the attempt dies holding the key; the retry finishes it once',
    async (crashAt) => {
      const merchantId = `m_${kind}_crash_${crashAt}`;
      const { provider, made } = countingProvider();
      const healthy = createChargeEngine({ pool: db.pgPool, provider });
      const dying = createChargeEngine({
        pool: db.pgPool,
        provider,
        faults: { shouldCrash: (point, ctx) => ctx.operation === kind && point === crashAt },
      });
      const charge = await healthy.processCharge(
        aKey(),
        aRequest({ merchantId, amountMinor: 1000, capture: kind === 'capture' ? false : true }),
      );
      const key = aKey();
      const run = (engine: typeof healthy) =>
        kind === 'refund'
          ? engine.processRefund(key, { merchantId, chargeId: charge.chargeId, amountMinor: 400 })
          : engine.processCapture(key, { merchantId, chargeId: charge.chargeId });
      const count = () => (kind === 'refund' ? made.refunds : made.captures);

      const crash = await run(dying).catch((e: unknown) => e);

      expect(crash).toBeInstanceOf(SimulatedCrashError);
      expect(count()).toBe(moved[crashAt] ? 1 : 0);
      const row = await readMovementKey(kind, merchantId, key);
      const completed = crashAt === 'afterCompleteCommit';
      expect(row?.recovery_point).toBe(completed ? 'completed' : 'reserved');
      if (!completed) {
        // Process death releases nothing: the lease holds until it runs out.
        expect(row?.lock_token).not.toBeNull();
        await expect(run(healthy)).rejects.toBeInstanceOf(IdempotencyKeyInUseError);
        await db.pool.query(sql.unsafe`
          UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
          WHERE merchant_id = ${merchantId} AND key = ${key}`);
      }

      const retry = await run(healthy);

      expect(retry.status).toBe('succeeded');
      expect(retry.replayed).toBe(completed);
      expect(count()).toBe(1);
      expect(await run(healthy)).toEqual({ ...retry, replayed: true });
    },
  );
});
