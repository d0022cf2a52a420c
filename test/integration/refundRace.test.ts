import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  ChargeOnceError,
  createChargeEngine,
  ProviderTransientError,
  SimulatedCrashError,
  type CrashPoint,
  type PaymentProvider,
  type ProviderRefund,
  type RefundOutcome,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { seededRandom } from '../../src/provider/seededRandom.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 20 });
});
afterAll(async () => {
  await db.drop();
});

const CRASHES: CrashPoint[] = [
  'afterClaimCommit',
  'beforeProviderCall',
  'afterProviderCall',
  'beforeCompleteCommit',
  'afterCompleteCommit',
];

it('50 partial refunds with 50 keys racing on one charge, with provider faults and crashes: never more than captured, once per key', async () => {
  const random = seededRandom(20261203);
  // No provider-side dedupe: a second refund under one key would be a second refund.
  const fake = createFakeProvider({ dedupe: false });
  // Every refund the provider really made, by provider key: the ledger the invariants are
  // checked against.
  const made = new Map<string, ProviderRefund[]>();
  const provider: PaymentProvider = {
    createCharge: (input, opts) => fake.createCharge(input, opts),
    findCharge: (key, opts) => fake.findCharge(key, opts),
    createRefund: async (input, opts) => {
      const roll = random();
      if (roll < 0.1) throw new ProviderTransientError('http_503');
      const refund = await fake.createRefund(input, opts);
      made.set(input.providerKey, [...(made.get(input.providerKey) ?? []), refund]);
      if (roll < 0.2) throw new ProviderTransientError('reset_after_call');
      return refund;
    },
    findRefund: async (key, opts) => {
      if (random() < 0.05) throw new ProviderTransientError('http_503');
      return fake.findRefund(key, opts);
    },
  };
  const engine = createChargeEngine({
    pool: db.pgPool,
    provider,
    sweepGraceMs: 0,
    faults: {
      // A crash at a random point of one attempt in ten; only refunds crash.
      shouldCrash: (point, ctx) =>
        ctx.operation === 'refund' && CRASHES.includes(point) && random() < 0.1 / CRASHES.length,
    },
  });
  const merchantId = 'm_refund_race';
  const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 10_000 }));
  const keys = Array.from({ length: 50 }, () => aKey());
  // Each asks 300: only 33 of them fit in 10,000, whatever order they come in.
  const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300 };

  const settle = async (key: string): Promise<RefundOutcome> => {
    for (let attempt = 0; attempt < 200; attempt++) {
      try {
        return await engine.processRefund(key, request);
      } catch (error) {
        if (!(error instanceof ChargeOnceError || error instanceof SimulatedCrashError)) {
          throw error;
        }
        // A crashed attempt holds its lease until it runs out: end it, as time would.
        await db.pool.query(sql.unsafe`
          UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
          WHERE merchant_id = ${merchantId} AND operation = 'refund' AND key = ${key}
            AND recovery_point IN ('started', 'reserved')`);
        if (attempt % 5 === 4) await engine.sweep();
      }
    }
    throw new Error(`refund ${key} never settled`);
  };
  const outcomes = await Promise.all(keys.map(settle));

  const refunded = [...made.values()].flat().reduce((sum, r) => sum + r.amountMinor, 0);
  expect(refunded).toBeLessThanOrEqual(10_000);
  for (const refunds of made.values()) expect(refunds).toHaveLength(1);
  // Every stored outcome agrees with the provider: a success for exactly the keys it refunded.
  const succeeded = outcomes.filter((o) => o.status === 'succeeded');
  expect(new Set(succeeded.map((o) => o.providerRefundId))).toEqual(
    new Set([...made.values()].flat().map((r) => r.id)),
  );
  expect(succeeded.length * 300).toBe(refunded);
  for (const o of outcomes) expect(['succeeded', 'refused', 'cancelled']).toContain(o.status);
  expect(outcomes.filter((o) => o.status === 'refused').length).toBeGreaterThan(0);
  // The refusals (and everything else) are stored: a retry replays each, byte for byte.
  for (const [i, key] of keys.entries()) {
    const replay = await engine.processRefund(key, request);
    expect(replay).toEqual({ ...outcomes[i], replayed: true });
  }
  const row = await db.pool.one(sql.type(
    z.object({ refunded_minor: z.number(), refund_reserved_minor: z.number() }),
  )`
    SELECT refunded_minor::float8 AS refunded_minor,
      refund_reserved_minor::float8 AS refund_reserved_minor
    FROM ${db.tables.charges} WHERE id = ${charge.chargeId}::uuid`);
  expect(row).toEqual({ refunded_minor: refunded, refund_reserved_minor: 0 });
});
