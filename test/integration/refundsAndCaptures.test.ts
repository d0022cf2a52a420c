import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  InvalidRequestError,
  ProviderAnswerInvalidError,
  ProviderTransientError,
  ProviderUnavailableError,
  type PaymentProvider,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 20 });
});
afterAll(async () => {
  await db.drop();
});

const totals = z.object({
  captured_minor: z.number().nullable(),
  capture_reserved_minor: z.number().nullable(),
  refund_reserved_minor: z.number(),
  refunded_minor: z.number(),
});

/** The charge row's money columns, straight from the table. */
async function chargeTotals(chargeId: string) {
  return db.pool.one(sql.type(totals)`
    SELECT captured_minor::float8 AS captured_minor,
      capture_reserved_minor::float8 AS capture_reserved_minor,
      refund_reserved_minor::float8 AS refund_reserved_minor,
      refunded_minor::float8 AS refunded_minor
    FROM ${db.tables.charges} WHERE id = ${chargeId}::uuid`);
}

async function countMovements(merchantId: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.movements} WHERE merchant_id = ${merchantId}`);
}

/**
 * The provider, with its next refund or capture calls failing transiently: `before` fails
 * without doing anything, `after` does it and then loses the answer.
 */
function withMovementFaults(provider: PaymentProvider) {
  const queue: Array<'before' | 'after'> = [];
  const faulty =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const fault = queue.shift();
      if (fault === 'before') throw new ProviderTransientError('http_503');
      const answer = await call(...args);
      if (fault === 'after') throw new ProviderTransientError('reset_after_call');
      return answer;
    };
  const wrapped: PaymentProvider = {
    createCharge: (input, opts) => provider.createCharge(input, opts),
    findCharge: (key, opts) => provider.findCharge(key, opts),
    createRefund: faulty((input, opts) => provider.createRefund!(input, opts)),
    findRefund: (key, opts) => provider.findRefund!(key, opts),
    capture: faulty((input, opts) => provider.capture!(input, opts)),
    findCapture: (input, opts) => provider.findCapture!(input, opts),
  };
  return { provider: wrapped, failNext: (...f: Array<'before' | 'after'>) => queue.push(...f) };
}

describe('processRefund', () => {
  it('refunds once per key and replays the outcome byte for byte', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId: 'm_ref_once' }));
    const key = aKey();
    const request = { merchantId: 'm_ref_once', chargeId: charge.chargeId, amountMinor: 700 };

    const first = await engine.processRefund(key, request);
    const again = await engine.processRefund(key, request);

    expect(first).toMatchObject({ status: 'succeeded', httpStatus: 201, replayed: false });
    expect(JSON.parse(first.body)).toMatchObject({
      object: 'refund',
      id: first.refundId,
      chargeId: charge.chargeId,
      amountMinor: 700,
      currency: 'NGN',
      providerRefundId: first.providerRefundId,
    });
    expect(again).toEqual({ ...first, replayed: true });
    expect(provider.calls.createRefund).toBe(1);
    const inspected = await engine.inspect({ merchantId: 'm_ref_once', key, operation: 'refund' });
    expect(inspected?.charge).toBeNull();
    expect(inspected?.movement).toMatchObject({
      id: first.refundId,
      kind: 'refund',
      chargeId: charge.chargeId,
      status: 'succeeded',
      amountMinor: 700,
      providerMovementId: first.providerRefundId,
    });
    expect(inspected?.history.map((h) => h.event)).toEqual(['claimed', 'reserved', 'completed']);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refunded_minor: 700,
      refund_reserved_minor: 0,
    });
  });

  it('refuses, and replays the refusal of, refunds past what was captured', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const charge = await engine.processCharge(
      aKey(),
      aRequest({ merchantId: 'm_ref_cap', amountMinor: 1000 }),
    );
    const refund = (amountMinor: number) => ({
      merchantId: 'm_ref_cap',
      chargeId: charge.chargeId,
      amountMinor,
    });

    const a = await engine.processRefund(aKey(), refund(600));
    const overKey = aKey();
    const over = await engine.processRefund(overKey, refund(401));
    const overAgain = await engine.processRefund(overKey, refund(401));
    const rest = await engine.processRefund(aKey(), refund(400));

    expect(a.status).toBe('succeeded');
    expect(over).toMatchObject({ status: 'refused', httpStatus: 422, providerRefundId: null });
    expect(JSON.parse(over.body)).toMatchObject({ refusal: 'exceeds_refundable' });
    expect(overAgain).toEqual({ ...over, replayed: true });
    expect(rest.status).toBe('succeeded');
    expect(await chargeTotals(charge.chargeId)).toMatchObject({ refunded_minor: 1000 });
  });

  it('refuses refunds of an unknown charge, a declined one and an uncaptured authorization', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const merchantId = 'm_ref_refusals';
    provider.failNext('decline');
    const declined = await engine.processCharge(aKey(), aRequest({ merchantId }));
    const authorized = await engine.processCharge(aKey(), aRequest({ merchantId, capture: false }));
    const refusal = async (chargeId: string) => {
      const refund = await engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 1 });
      return (JSON.parse(refund.body) as { refusal?: string }).refusal;
    };

    expect(await refusal(randomUUID())).toBe('charge_not_found');
    expect(await refusal(declined.chargeId)).toBe('charge_not_succeeded');
    expect(await refusal(authorized.chargeId)).toBe('charge_not_captured');
    expect(provider.calls.createRefund).toBe(0);
  });

  it('refuses bad input before writing anything', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const merchantId = 'm_ref_invalid';
    const bad = [
      { merchantId, chargeId: 'ch_1', amountMinor: 1 },
      { merchantId, chargeId: randomUUID(), amountMinor: 0 },
      { merchantId, chargeId: randomUUID(), amountMinor: 1.5 },
      { merchantId, chargeId: randomUUID(), amountMinor: 1, reason: 'x'.repeat(201) },
      { merchantId, chargeId: randomUUID(), amountMinor: 1, extra: true },
    ];
    for (const request of bad) {
      await expect(engine.processRefund(aKey(), request as never)).rejects.toBeInstanceOf(
        InvalidRequestError,
      );
    }
    await expect(
      engine.processRefund('', { merchantId, chargeId: randomUUID(), amountMinor: 1 }),
    ).rejects.toBeInstanceOf(InvalidRequestError);
    expect(await countMovements(merchantId)).toBe(0);
  });

  it('refuses a key reused for another refund, naming the field', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId: 'm_ref_reuse' }));
    const key = aKey();
    await engine.processRefund(key, {
      merchantId: 'm_ref_reuse',
      chargeId: charge.chargeId,
      amountMinor: 5,
    });

    const error: unknown = await engine
      .processRefund(key, { merchantId: 'm_ref_reuse', chargeId: charge.chargeId, amountMinor: 6 })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(IdempotencyKeyReusedError);
    expect(error).toMatchObject({ differingFields: ['amountMinor'] });
  });

  it('keeps a refund in doubt reserved, so others cannot overshoot, until its retry adopts it', async () => {
    const fake = createFakeProvider();
    const { provider, failNext } = withMovementFaults(fake);
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const merchantId = 'm_ref_doubt';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 800 };

    failNext('after');
    const lost = await engine.processRefund(key, request).catch((e: unknown) => e);
    const meanwhile = await engine.processRefund(aKey(), { ...request, amountMinor: 201 });
    const retried = await engine.processRefund(key, request);

    expect(lost).toBeInstanceOf(ProviderUnavailableError);
    expect(JSON.parse(meanwhile.body)).toMatchObject({ refusal: 'exceeds_refundable' });
    expect(retried).toMatchObject({ status: 'succeeded', replayed: false });
    expect(fake.calls.createRefund).toBe(1);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refunded_minor: 800,
      refund_reserved_minor: 0,
    });
  });

  it('the sweeper cancels a refund the provider never made, and gives its amount back', async () => {
    const fake = createFakeProvider();
    const { provider, failNext } = withMovementFaults(fake);
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const merchantId = 'm_ref_sweep';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 1000 };

    failNext('before');
    await engine.processRefund(key, request).catch(() => undefined);
    const swept = await engine.sweep();
    const replay = await engine.processRefund(key, request);
    const again = await engine.processRefund(aKey(), request);

    expect(swept).toMatchObject({ cancelled: 1 });
    expect(replay).toMatchObject({ status: 'cancelled', httpStatus: 410, replayed: true });
    expect(again.status).toBe('succeeded');
    expect(fake.calls.createRefund).toBe(1);
  });

  it('the sweeper adopts a refund the provider made', async () => {
    const fake = createFakeProvider();
    const { provider, failNext } = withMovementFaults(fake);
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const merchantId = 'm_ref_adopt';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 250 };

    failNext('after');
    await engine.processRefund(key, request).catch(() => undefined);
    const swept = await engine.sweep();
    const replay = await engine.processRefund(key, request);

    expect(swept).toMatchObject({ adopted: 1 });
    expect(replay).toMatchObject({ status: 'succeeded', replayed: true });
    expect(fake.calls.createRefund).toBe(1);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({ refunded_minor: 250 });
  });

  it("parks a refund the provider answered wrongly; resolve refuses a charge's outcome for it, requeue and a sweep finish it", async () => {
    const fake = createFakeProvider();
    let lie = true;
    const provider: PaymentProvider = {
      ...withMovementFaults(fake).provider,
      createRefund: async (input, opts) =>
        lie
          ? {
              id: 're_wrong',
              status: 'succeeded',
              amountMinor: input.amountMinor + 1,
              currency: input.currency,
            }
          : fake.createRefund(input, opts),
    };
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const merchantId = 'm_ref_parked';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 100 };

    const parked = await engine.processRefund(key, request).catch((e: unknown) => e);
    const resolving = await engine
      .resolve({
        merchantId,
        key,
        operation: 'refund',
        // A charge's outcome: a refund fails, it is not declined.
        outcome: 'declined',
        actor: 'ops',
        reason: 'checked',
      })
      .catch((e: unknown) => e);
    lie = false;
    const requeued = await engine.requeue({
      merchantId,
      key,
      operation: 'refund',
      actor: 'ops',
      reason: 'provider fixed',
    });
    const swept = await engine.sweep();
    const replay = await engine.processRefund(key, request);

    expect(parked).toBeInstanceOf(ProviderAnswerInvalidError);
    expect(resolving).toBeInstanceOf(InvalidRequestError);
    expect(requeued).toBe(true);
    expect(swept).toMatchObject({ cancelled: 1 });
    expect(replay).toMatchObject({ status: 'cancelled', replayed: true });
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refunded_minor: 0,
      refund_reserved_minor: 0,
    });
  });

  it.each([
    { name: 'without hooks', hooks: {} },
    { name: 'with a complete hook', hooks: { refund: { complete: () => Promise.resolve() } } },
  ])(
    'parks a refund the provider answers with a refund id another refund recorded ($name)',
    async ({ name, hooks }) => {
      const fake = createFakeProvider();
      const provider: PaymentProvider = {
        ...withMovementFaults(fake).provider,
        createRefund: async (input, opts) => ({
          ...(await fake.createRefund(input, opts)),
          id: 're_always_the_same',
        }),
      };
      const engine = createChargeEngine({ pool: db.pgPool, provider, hooks });
      const merchantId = `m_ref_same_refund_id_${name.length}`;
      const charge = await engine.processCharge(
        aKey(),
        aRequest({ merchantId, amountMinor: 1000 }),
      );
      const refund = { merchantId, chargeId: charge.chargeId, amountMinor: 100 };
      await engine.processRefund(aKey(), refund);
      const key = aKey();

      const error = await engine.processRefund(key, refund).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(ProviderAnswerInvalidError);
      const [stuck] = (await engine.listStuck()).filter((s) => s.key === key);
      expect(stuck?.reason).toMatch(/re_always_the_same is already recorded for another refund/);
      // The first refund counted; the second still held, for a person to look at.
      expect(await chargeTotals(charge.chargeId)).toMatchObject({
        refunded_minor: 100,
        refund_reserved_minor: 100,
      });
    },
  );

  it('with inProgress { waitMs }, callers racing on one refund key all get its one outcome', async () => {
    const provider = createFakeProvider({
      dedupe: false,
      // Slow enough that the others find the key held and wait on it.
      beforeAnswer: (method) =>
        method === 'createRefund'
          ? new Promise((resolve) => setTimeout(resolve, 50))
          : Promise.resolve(),
    });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 10_000 },
    });
    const merchantId = 'm_ref_wait';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 10 };

    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => engine.processRefund(key, request)),
    );

    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    for (const o of outcomes) expect(o.body).toBe(outcomes[0]?.body);
    expect(provider.calls.createRefund).toBe(1);
    await engine.close();
  });

  it('needs a provider that can refund', async () => {
    const fake = createFakeProvider();
    const chargesOnly: PaymentProvider = {
      createCharge: (input, opts) => fake.createCharge(input, opts),
      findCharge: (key, opts) => fake.findCharge(key, opts),
    };
    const engine = createChargeEngine({ pool: db.pgPool, provider: chargesOnly });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId: 'm_ref_none' }));

    await expect(
      engine.processRefund(aKey(), {
        merchantId: 'm_ref_none',
        chargeId: charge.chargeId,
        amountMinor: 1,
      }),
    ).rejects.toBeInstanceOf(InvalidConfigurationError);
    expect(await countMovements('m_ref_none')).toBe(0);
  });
});

describe('processCapture', () => {
  it('captures an authorization once, partly; refunds stay within what was captured', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const merchantId = 'm_cap_once';
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const key = aKey();

    const captured = await engine.processCapture(key, {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 600,
    });
    const replay = await engine.processCapture(key, {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 600,
    });
    const second = await engine.processCapture(aKey(), { merchantId, chargeId: auth.chargeId });
    const tooMuch = await engine.processRefund(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 601,
    });
    const enough = await engine.processRefund(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 600,
    });

    expect(JSON.parse(auth.body)).toMatchObject({ status: 'succeeded', captured: false });
    expect(captured).toMatchObject({ status: 'succeeded', httpStatus: 201 });
    expect(JSON.parse(captured.body)).toMatchObject({ object: 'capture', amountMinor: 600 });
    expect(replay).toEqual({ ...captured, replayed: true });
    expect(JSON.parse(second.body)).toMatchObject({ refusal: 'charge_not_capturable' });
    expect(JSON.parse(tooMuch.body)).toMatchObject({ refusal: 'exceeds_refundable' });
    expect(enough.status).toBe('succeeded');
    expect(provider.calls.capture).toBe(1);
    expect(await chargeTotals(auth.chargeId)).toMatchObject({
      captured_minor: 600,
      capture_reserved_minor: null,
      refunded_minor: 600,
    });
  });

  it('refuses to capture a charge captured at once, or more than authorized', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const merchantId = 'm_cap_refusals';
    const captured = await engine.processCharge(aKey(), aRequest({ merchantId }));
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 100, capture: false }),
    );

    const ofCaptured = await engine.processCapture(aKey(), {
      merchantId,
      chargeId: captured.chargeId,
    });
    const tooMuch = await engine.processCapture(aKey(), {
      merchantId,
      chargeId: auth.chargeId,
      amountMinor: 101,
    });

    expect(JSON.parse(ofCaptured.body)).toMatchObject({ refusal: 'charge_not_capturable' });
    expect(JSON.parse(tooMuch.body)).toMatchObject({ refusal: 'exceeds_authorized' });
    expect(await chargeTotals(auth.chargeId)).toMatchObject({ captured_minor: null });
  });

  it('20 concurrent captures of one authorization with 20 keys: one capture', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const merchantId = 'm_cap_race';
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 900, capture: false }),
    );

    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        engine.processCapture(aKey(), { merchantId, chargeId: auth.chargeId }),
      ),
    );

    expect(outcomes.filter((o) => o.status === 'succeeded')).toHaveLength(1);
    expect(outcomes.filter((o) => o.status === 'refused')).toHaveLength(19);
    expect(provider.calls.capture).toBe(1);
    expect(await chargeTotals(auth.chargeId)).toMatchObject({ captured_minor: 900 });
  });
});
