import fc from 'fast-check';
import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  ChargeOnceError,
  createChargeEngine,
  CRASH_POINTS,
  ProviderTransientError,
  SimulatedCrashError,
  type CrashPoint,
  type PaymentProvider,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

// Random schedules of refunds and captures of one charge, each attempt maybe crashing at any
// point or meeting a provider that fails before or after moving the money, some keys sent again,
// sweeps in between; then everything is settled and the books are checked against the provider.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const RUNS = Number(process.env.CHARGEONCE_PROPERTY_RUNS ?? 200);

type Op = {
  kind: 'refund' | 'capture';
  /** Index of an earlier op to send again (same key, same request), or null for a new key. */
  again: number | null;
  amountMinor: number | null;
  crash: CrashPoint | null;
  fault: 'before' | 'after' | null;
  sweepAfter: boolean;
};

const opArb: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('refund' as const, 'capture' as const),
  again: fc.option(fc.nat({ max: 11 }), { freq: 3 }),
  amountMinor: fc.option(fc.integer({ min: 1, max: 700 }), { freq: 6 }),
  crash: fc.option(fc.constantFrom(...CRASH_POINTS), { freq: 3 }),
  fault: fc.option(fc.constantFrom('before' as const, 'after' as const), { freq: 3 }),
  sweepAfter: fc.boolean(),
});

const scheduleArb = fc.record({
  amountMinor: fc.integer({ min: 100, max: 1_000 }),
  authorizeOnly: fc.boolean(),
  ops: fc.array(opArb, { minLength: 1, maxLength: 12 }),
});

const totalsRow = z.object({
  captured_minor: z.number().nullable(),
  capture_reserved_minor: z.number().nullable(),
  refund_reserved_minor: z.number(),
  refunded_minor: z.number(),
});

it('refunds never exceed the capture, a capture the authorization; each key moves money once; the books agree with the provider', async () => {
  let schedule = 0;
  await fc.assert(
    fc.asyncProperty(scheduleArb, async ({ amountMinor, authorizeOnly, ops }) => {
      schedule += 1;
      const merchantId = `m_prop_mv_${schedule}`;
      const fake = createFakeProvider({ dedupe: false });
      // The fault of the attempt now running, by kind: set before each attempt, taken once.
      const pending: { fault: Op['fault'] } = { fault: null };
      const faulty =
        <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
        async (...args: A): Promise<R> => {
          const fault = pending.fault;
          pending.fault = null;
          if (fault === 'before') throw new ProviderTransientError('http_503');
          const answer = await call(...args);
          if (fault === 'after') throw new ProviderTransientError('reset_after_call');
          return answer;
        };
      const provider: PaymentProvider = {
        createCharge: (input, opts) => fake.createCharge(input, opts),
        findCharge: (key, opts) => fake.findCharge(key, opts),
        createRefund: faulty((input, opts) => fake.createRefund(input, opts)),
        findRefund: (key, opts) => fake.findRefund(key, opts),
        capture: faulty((input, opts) => fake.capture(input, opts)),
        findCapture: (input, opts) => fake.findCapture(input, opts),
      };
      const crashing: { point: CrashPoint | null } = { point: null };
      const engine = createChargeEngine({
        pool: db.pgPool,
        provider,
        sweepGraceMs: 0,
        faults: {
          shouldCrash: (point, ctx) => ctx.operation !== 'charge' && point === crashing.point,
        },
      });
      const charge = await engine.processCharge(
        aKey(),
        aRequest({ merchantId, amountMinor, capture: !authorizeOnly }),
      );
      const endLeases = () =>
        db.pool.query(sql.unsafe`
          UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
          WHERE merchant_id = ${merchantId} AND recovery_point IN ('started', 'reserved')`);
      const sent: Array<{ kind: Op['kind']; key: string; amountMinor: number | null }> = [];
      const send = (op: { kind: Op['kind']; key: string; amountMinor: number | null }) =>
        op.kind === 'refund'
          ? engine.processRefund(op.key, {
              merchantId,
              chargeId: charge.chargeId,
              amountMinor: op.amountMinor ?? 1,
            })
          : engine.processCapture(op.key, {
              merchantId,
              chargeId: charge.chargeId,
              ...(op.amountMinor === null ? {} : { amountMinor: op.amountMinor }),
            });

      for (const op of ops) {
        const earlier = op.again === null ? undefined : sent[op.again % Math.max(1, sent.length)];
        const call = earlier ?? { kind: op.kind, key: aKey(), amountMinor: op.amountMinor };
        if (!earlier) sent.push(call);
        crashing.point = op.crash;
        pending.fault = op.fault;
        await send(call).catch((error: unknown) => {
          if (!(error instanceof ChargeOnceError || error instanceof SimulatedCrashError)) {
            throw error;
          }
        });
        crashing.point = null;
        pending.fault = null;
        if (op.sweepAfter) {
          await endLeases();
          await engine.sweep();
        }
      }

      // Settle every key: leases end, the sweeper finishes what it can, each key is asked again.
      await endLeases();
      await engine.sweep();
      const outcomes = [];
      for (const call of sent) outcomes.push(await send(call));

      const refunds = fake.refundLedger().filter((r) => r.status === 'succeeded');
      const captures = fake.captureLedger().filter((c) => c.status === 'succeeded');
      const refunded = refunds.reduce((sum, r) => sum + r.amountMinor, 0);
      const captured = authorizeOnly
        ? captures.reduce((sum, c) => sum + c.amountMinor, 0)
        : amountMinor;
      expect(refunded).toBeLessThanOrEqual(captured);
      expect(captured).toBeLessThanOrEqual(amountMinor);
      expect(captures.length).toBeLessThanOrEqual(authorizeOnly ? 1 : 0);
      for (const r of fake.refundLedger()) expect(fake.refundsFor(r.providerKey)).toBe(1);
      for (const c of fake.captureLedger()) expect(fake.capturesFor(c.providerKey)).toBe(1);
      // Every stored success is one the provider made, and every one it made is stored.
      const stored = outcomes.filter((o) => o.status === 'succeeded');
      const storedIds = stored.map((o) =>
        'refundId' in o ? o.providerRefundId : o.providerCaptureId,
      );
      expect(new Set(storedIds)).toEqual(
        new Set([...refunds.map((r) => r.id), ...captures.map((c) => c.id)]),
      );
      const row = await db.pool.one(sql.type(totalsRow)`
        SELECT captured_minor::float8 AS captured_minor,
          capture_reserved_minor::float8 AS capture_reserved_minor,
          refund_reserved_minor::float8 AS refund_reserved_minor,
          refunded_minor::float8 AS refunded_minor
        FROM ${db.tables.charges} WHERE id = ${charge.chargeId}::uuid`);
      expect(row).toEqual({
        captured_minor: authorizeOnly && captures.length > 0 ? captured : null,
        capture_reserved_minor: null,
        refund_reserved_minor: 0,
        refunded_minor: refunded,
      });
      await engine.close();
    }),
    { numRuns: RUNS },
  );
}, 600_000);
