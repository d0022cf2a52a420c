import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  InvalidRequestError,
  KeyNotResolvableError,
  ProviderAnswerInvalidError,
  type ChargeEngine,
  type ChargeHooks,
  type ResolveInput,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { withWrongMovementAnswers } from '../support/wrongMovementAnswers.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

let db: TestDatabase;
let engine: ChargeEngine;
const fake = createFakeProvider();
/** While set, refunds and captures get an answer for another amount, and nothing is recorded. */
let answerWrongly = false;

/** The fake provider, except while `answerWrongly`: then the engine must park the key. */
const provider = withWrongMovementAnswers(fake, () => answerWrongly);

/** The caller's own table, written by the refund and capture hooks. */
const hookRow = z.object({
  kind: z.string(),
  status: z.string().nullable(),
  provider_movement_id: z.string().nullable(),
  failure_code: z.string().nullable(),
  adopted: z.boolean().nullable(),
});

function loggingHooks(operation: 'refund' | 'capture'): NonNullable<ChargeHooks['refund']> {
  return {
    complete: async (tx, ctx) => {
      await tx.query(
        'INSERT INTO hook_log (key, kind, status, provider_movement_id, failure_code, adopted) VALUES ($1, $2, $3, $4, $5, $6)',
        [
          ctx.key,
          `${operation}.complete`,
          ctx.status,
          ctx.providerMovementId,
          ctx.failureCode,
          ctx.adopted,
        ],
      );
    },
    cancel: async (tx, ctx) => {
      await tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [
        ctx.key,
        `${operation}.cancel`,
      ]);
    },
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`
    CREATE TABLE hook_log (key text NOT NULL, kind text NOT NULL, status text,
      provider_movement_id text, failure_code text, adopted boolean)`);
  engine = createChargeEngine({ pool: db.pgPool, provider });
});
afterAll(async () => {
  await engine.close();
  await db.drop();
});

const totalsRow = z.object({
  captured_minor: z.number().nullable(),
  capture_reserved_minor: z.number().nullable(),
  refund_reserved_minor: z.number(),
  refunded_minor: z.number(),
});

/** The charge row's money columns, straight from the table. */
async function chargeTotals(chargeId: string) {
  return db.pool.one(sql.type(totalsRow)`
    SELECT captured_minor::float8 AS captured_minor,
      capture_reserved_minor::float8 AS capture_reserved_minor,
      refund_reserved_minor::float8 AS refund_reserved_minor,
      refunded_minor::float8 AS refunded_minor
    FROM ${db.tables.charges} WHERE id = ${chargeId}::uuid`);
}

const keyRow = z.object({
  operation: z.string(),
  recovery_point: z.string(),
  lock_token: z.string().nullable(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
});

/** The stored row of a refund or capture key (keys are unique per merchant in these tests). */
async function readKey(merchantId: string, key: string) {
  return db.pool.maybeOne(sql.type(keyRow)`
    SELECT operation, recovery_point, lock_token::text, response_status, response_body
    FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${key}`);
}

async function auditCount(merchantId: string, key: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.adminActions}
    WHERE merchant_id = ${merchantId} AND key = ${key}`);
}

async function hookLog(key: string) {
  return db.pool.any(sql.type(hookRow)`
    SELECT kind, status, provider_movement_id, failure_code, adopted FROM hook_log
    WHERE key = ${key}`);
}

const person = { actor: 'ada@example.com', reason: 'provider dashboard, ticket OPS-7' };

/** A refund of `amountMinor` of a fresh charge of 1000, parked on an untrusted answer. */
async function aParkedRefund(merchantId: string, amountMinor: number, on: ChargeEngine = engine) {
  const charge = await on.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
  const key = aKey();
  const request = { merchantId, chargeId: charge.chargeId, amountMinor, reason: 'damaged' };
  answerWrongly = true;
  try {
    await expect(on.processRefund(key, request)).rejects.toBeInstanceOf(ProviderAnswerInvalidError);
  } finally {
    answerWrongly = false;
  }
  expect((await readKey(merchantId, key))?.recovery_point).toBe('failed');
  return { chargeId: charge.chargeId, key, request };
}

/** A capture of an authorization of 1000, parked on an untrusted answer (`capture` omitted: all). */
async function aParkedCapture(merchantId: string, amountMinor?: number) {
  const auth = await engine.processCharge(
    aKey(),
    aRequest({ merchantId, amountMinor: 1000, capture: false }),
  );
  const key = aKey();
  const request = {
    merchantId,
    chargeId: auth.chargeId,
    ...(amountMinor === undefined ? {} : { amountMinor }),
  };
  answerWrongly = true;
  try {
    await expect(engine.processCapture(key, request)).rejects.toBeInstanceOf(
      ProviderAnswerInvalidError,
    );
  } finally {
    answerWrongly = false;
  }
  return { chargeId: auth.chargeId, key, request };
}

describe('resolve a parked refund', () => {
  it('succeeded: refunded on the charge, stored as the engine would, replayed, audited', async () => {
    const merchantId = 'm_rm_refund_ok';
    // The provider refunded, but its answer could not be trusted: the key is parked.
    fake.failNextRefund('malformed');
    const chargeKey = aKey();
    const charge = await engine.processCharge(
      chargeKey,
      aRequest({ merchantId, amountMinor: 1000 }),
    );
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300, reason: 'damaged' };
    await expect(engine.processRefund(key, request)).rejects.toBeInstanceOf(
      ProviderAnswerInvalidError,
    );
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 300,
      refunded_minor: 0,
    });
    // What the person sees before acting: what the charge has, and what this refund holds.
    const parked = await engine.inspect({ merchantId, key, operation: 'refund' });
    expect(parked?.movement?.chargeTotals).toEqual({
      authorizedOnly: false,
      capturedMinor: null,
      captureReservedMinor: null,
      refundReservedMinor: 300,
      refundedMinor: 0,
    });
    // What the person finds in the provider's dashboard.
    const found = fake.refundLedger().at(-1)!;

    const result = await engine.resolve({
      merchantId,
      key,
      operation: 'refund',
      outcome: 'succeeded',
      providerRefundId: found.id,
      ...person,
    });

    expect(result.kind).toBe('refund');
    const refundId = result.kind === 'refund' ? result.outcome.refundId : '';
    expect(result.outcome).toMatchObject({
      status: 'succeeded',
      httpStatus: 201,
      replayed: false,
      chargeId: charge.chargeId,
      providerRefundId: found.id,
    });
    expect(JSON.parse(result.outcome.body)).toEqual({
      id: refundId,
      object: 'refund',
      chargeId: charge.chargeId,
      status: 'succeeded',
      amountMinor: 300,
      currency: 'NGN',
      reason: 'damaged',
      providerRefundId: found.id,
    });
    // The same fields in the same order as a refund the engine completed itself.
    const made = await engine.processRefund(aKey(), { ...request, amountMinor: 100 });
    expect(Object.keys(JSON.parse(result.outcome.body) as object)).toEqual(
      Object.keys(JSON.parse(made.body) as object),
    );
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 400,
    });
    expect(await readKey(merchantId, key)).toMatchObject({
      recovery_point: 'completed',
      lock_token: null,
      response_status: 201,
      response_body: result.outcome.body,
    });
    // A retry replays it, byte for byte.
    expect(await engine.processRefund(key, request)).toEqual({
      ...result.outcome,
      replayed: true,
    });
    // The refunded total counts it: 600 more fit, 1 more does not.
    expect((await engine.processRefund(aKey(), { ...request, amountMinor: 600 })).status).toBe(
      'succeeded',
    );
    const over = await engine.processRefund(aKey(), { ...request, amountMinor: 1 });
    expect(JSON.parse(over.body)).toMatchObject({ refusal: 'exceeds_refundable' });

    const inspected = await engine.inspect({ merchantId, key, operation: 'refund' });
    expect(inspected?.movement).toMatchObject({
      status: 'succeeded',
      providerMovementId: found.id,
      chargeTotals: { refundReservedMinor: 0, refundedMinor: 1000 },
    });
    const ofCharge = await engine.inspect({ merchantId, key: chargeKey });
    expect(ofCharge?.charge?.totals).toEqual({
      authorizedOnly: false,
      capturedMinor: null,
      captureReservedMinor: null,
      refundReservedMinor: 0,
      refundedMinor: 1000,
    });
    expect(inspected?.audit).toEqual([result.audit]);
    expect(result.audit).toMatchObject({
      action: 'resolve',
      result: 'succeeded',
      ...person,
      // The charge the refund moved money on, and the refund itself.
      chargeId: charge.chargeId,
      movementId: refundId,
      providerChargeId: null,
      providerMovementId: found.id,
      failureCode: null,
    });
    expect(result.audit.parkedReason).toContain('provider answer');
    expect(inspected?.history.map((step) => [step.event, step.detail])).toEqual([
      ['claimed', null],
      ['reserved', null],
      ['parked', result.audit.parkedReason],
      ['resolved', 'succeeded by ada@example.com'],
      ['completed', 'succeeded'],
    ]);
  });

  it('failed: 402 with the failure code, the amount released, and a refund of it succeeds later', async () => {
    const merchantId = 'm_rm_refund_failed';
    const parked = await aParkedRefund(merchantId, 1000);

    const { outcome, audit } = await engine.resolve({
      merchantId,
      key: parked.key,
      operation: 'refund',
      outcome: 'failed',
      providerRefundId: 're_failed_1',
      failureCode: 'expired_or_canceled_card',
      ...person,
    });

    expect(outcome).toMatchObject({ status: 'failed', httpStatus: 402 });
    expect(JSON.parse(outcome.body)).toMatchObject({
      status: 'failed',
      amountMinor: 1000,
      providerRefundId: 're_failed_1',
      failureCode: 'expired_or_canceled_card',
    });
    expect(audit).toMatchObject({ result: 'failed', failureCode: 'expired_or_canceled_card' });
    expect(await chargeTotals(parked.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 0,
    });
    expect(await engine.processRefund(parked.key, parked.request)).toMatchObject({
      status: 'failed',
      replayed: true,
      body: outcome.body,
    });
    const again = await engine.processRefund(aKey(), parked.request);
    expect(again.status).toBe('succeeded');
    expect(await chargeTotals(parked.chargeId)).toMatchObject({ refunded_minor: 1000 });
  });

  it('cancelled: 410, no provider refund, the amount released for a later refund', async () => {
    const merchantId = 'm_rm_refund_cancelled';
    const parked = await aParkedRefund(merchantId, 700);
    expect(await chargeTotals(parked.chargeId)).toMatchObject({ refund_reserved_minor: 700 });

    const { outcome } = await engine.resolve({
      merchantId,
      key: parked.key,
      operation: 'refund',
      outcome: 'cancelled',
      ...person,
    });

    expect(outcome).toMatchObject({ status: 'cancelled', httpStatus: 410 });
    expect(outcome).toMatchObject({ providerRefundId: null });
    expect(JSON.parse(outcome.body)).toMatchObject({ status: 'cancelled', providerRefundId: null });
    expect(await chargeTotals(parked.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 0,
    });
    expect((await engine.processRefund(parked.key, parked.request)).status).toBe('cancelled');
    const all = await engine.processRefund(aKey(), { ...parked.request, amountMinor: 1000 });
    expect(all.status).toBe('succeeded');
  });
});

describe('resolve a parked capture', () => {
  it('succeeded: the part it reserved becomes what was captured, and refunds stay within it', async () => {
    const merchantId = 'm_rm_capture_ok';
    fake.failNextCapture('malformed');
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const key = aKey();
    const request = { merchantId, chargeId: auth.chargeId, amountMinor: 400 };
    await expect(engine.processCapture(key, request)).rejects.toBeInstanceOf(
      ProviderAnswerInvalidError,
    );
    expect(await chargeTotals(auth.chargeId)).toMatchObject({
      capture_reserved_minor: 400,
      captured_minor: null,
    });
    const found = fake.captureLedger().at(-1)!;

    const result = await engine.resolve({
      merchantId,
      key,
      operation: 'capture',
      outcome: 'succeeded',
      providerCaptureId: found.id,
      ...person,
    });

    expect(result.kind).toBe('capture');
    expect(result.outcome).toMatchObject({
      status: 'succeeded',
      httpStatus: 201,
      chargeId: auth.chargeId,
      providerCaptureId: found.id,
    });
    expect(JSON.parse(result.outcome.body)).toMatchObject({
      object: 'capture',
      status: 'succeeded',
      amountMinor: 400,
      providerCaptureId: found.id,
    });
    expect(result.audit).toMatchObject({ result: 'succeeded', providerMovementId: found.id });
    expect(await chargeTotals(auth.chargeId)).toMatchObject({
      capture_reserved_minor: null,
      captured_minor: 400,
    });
    expect(await engine.processCapture(key, request)).toEqual({
      ...result.outcome,
      replayed: true,
    });
    const second = await engine.processCapture(aKey(), { merchantId, chargeId: auth.chargeId });
    expect(JSON.parse(second.body)).toMatchObject({ refusal: 'charge_not_capturable' });
    const tooMuch = await engine.processRefund(aKey(), { ...request, amountMinor: 401 });
    expect(JSON.parse(tooMuch.body)).toMatchObject({ refusal: 'exceeds_refundable' });
    expect((await engine.processRefund(aKey(), request)).status).toBe('succeeded');
  });

  it('failed or cancelled: the hold is released and the authorization can be captured again', async () => {
    const merchantId = 'm_rm_capture_released';
    const failed = await aParkedCapture(merchantId);
    const cancelled = await aParkedCapture(merchantId, 250);

    const f = await engine.resolve({
      merchantId,
      key: failed.key,
      operation: 'capture',
      outcome: 'failed',
      providerCaptureId: 'cap_failed_1',
      ...person,
    });
    const c = await engine.resolve({
      merchantId,
      key: cancelled.key,
      operation: 'capture',
      outcome: 'cancelled',
      ...person,
    });

    expect(f.outcome).toMatchObject({ status: 'failed', httpStatus: 402 });
    expect(JSON.parse(f.outcome.body)).toMatchObject({ amountMinor: 1000 });
    expect(JSON.parse(f.outcome.body)).not.toHaveProperty('failureCode');
    expect(c.outcome).toMatchObject({ status: 'cancelled', httpStatus: 410 });
    for (const parked of [failed, cancelled]) {
      expect(await chargeTotals(parked.chargeId)).toMatchObject({
        capture_reserved_minor: null,
        captured_minor: null,
      });
      const captured = await engine.processCapture(aKey(), {
        merchantId,
        chargeId: parked.chargeId,
      });
      expect(captured.status).toBe('succeeded');
    }
  });
});

describe('resolve of refund and capture keys: refusals and hooks', () => {
  it('never on a completed key: refused, nothing written, totals counted once', async () => {
    const merchantId = 'm_rm_completed';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
    const madeKey = aKey();
    const made = await engine.processRefund(madeKey, {
      merchantId,
      chargeId: charge.chargeId,
      amountMinor: 100,
    });
    const parked = await aParkedRefund(merchantId, 200);
    const first = await engine.resolve({
      merchantId,
      key: parked.key,
      operation: 'refund',
      outcome: 'succeeded',
      providerRefundId: 're_once',
      ...person,
    });

    const onMade = await engine
      .resolve({ merchantId, key: madeKey, operation: 'refund', outcome: 'cancelled', ...person })
      .catch((error: unknown) => error);
    const again = await engine
      .resolve({
        merchantId,
        key: parked.key,
        operation: 'refund',
        outcome: 'succeeded',
        providerRefundId: 're_twice',
        ...person,
      })
      .catch((error: unknown) => error);

    for (const error of [onMade, again]) {
      expect(error).toBeInstanceOf(KeyNotResolvableError);
      expect(error).toMatchObject({ reason: 'completed', recoveryPoint: 'completed' });
    }
    expect((await readKey(merchantId, madeKey))?.response_body).toBe(made.body);
    expect((await readKey(merchantId, parked.key))?.response_body).toBe(first.outcome.body);
    expect(await auditCount(merchantId, madeKey)).toBe(0);
    expect(await auditCount(merchantId, parked.key)).toBe(1);
    expect(await chargeTotals(charge.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 100,
    });
    expect(await chargeTotals(parked.chargeId)).toMatchObject({
      refund_reserved_minor: 0,
      refunded_minor: 200,
    });
  });

  it('refuses a provider refund id already recorded for another refund: nothing written, counted once', async () => {
    const merchantId = 'm_rm_same_refund_id';
    const first = await aParkedRefund(merchantId, 300);
    const second = await aParkedRefund(merchantId, 500);
    const other = await aParkedRefund('m_rm_same_refund_id_other', 400);
    const asSucceeded = (parked: { key: string }, onMerchant = merchantId) =>
      engine.resolve({
        merchantId: onMerchant,
        key: parked.key,
        operation: 'refund',
        outcome: 'succeeded',
        providerRefundId: 're_pasted_twice',
        ...person,
      });
    await asSucceeded(first);

    const error = await asSucceeded(second).catch((e: unknown) => e);
    const asFailed = await engine
      .resolve({
        merchantId,
        key: second.key,
        operation: 'refund',
        outcome: 'failed',
        providerRefundId: 're_pasted_twice',
        ...person,
      })
      .catch((e: unknown) => e);
    // Unique per merchant, as a charge's provider id is.
    const elsewhere = await asSucceeded(other, 'm_rm_same_refund_id_other');

    for (const refused of [error, asFailed]) {
      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect(refused).toMatchObject({
        issues: [
          {
            field: 'providerRefundId',
            message: 'is already recorded for another refund of this merchant',
          },
        ],
      });
    }
    expect(await readKey(merchantId, second.key)).toMatchObject({
      recovery_point: 'failed',
      response_body: null,
    });
    expect(await auditCount(merchantId, second.key)).toBe(0);
    expect(await chargeTotals(first.chargeId)).toMatchObject({ refunded_minor: 300 });
    expect(await chargeTotals(second.chargeId)).toMatchObject({
      refund_reserved_minor: 500,
      refunded_minor: 0,
    });
    expect(elsewhere.outcome).toMatchObject({ status: 'succeeded' });
  });

  it("lets captures share a provider id (a provider may name a capture by its charge's id)", async () => {
    const merchantId = 'm_rm_capture_same_id';
    const failed = await aParkedCapture(merchantId);
    await engine.resolve({
      merchantId,
      key: failed.key,
      operation: 'capture',
      outcome: 'failed',
      providerCaptureId: 'ch_named_capture',
      ...person,
    });
    // The same authorization captured again, parked again.
    const retried = { key: aKey() };
    answerWrongly = true;
    try {
      await expect(
        engine.processCapture(retried.key, { merchantId, chargeId: failed.chargeId }),
      ).rejects.toBeInstanceOf(ProviderAnswerInvalidError);
    } finally {
      answerWrongly = false;
    }

    const { outcome } = await engine.resolve({
      merchantId,
      key: retried.key,
      operation: 'capture',
      outcome: 'succeeded',
      providerCaptureId: 'ch_named_capture',
      ...person,
    });

    expect(outcome).toMatchObject({ status: 'succeeded', providerCaptureId: 'ch_named_capture' });
    expect(await chargeTotals(failed.chargeId)).toMatchObject({ captured_minor: 1000 });
  });

  it("refuses bad input before writing anything, naming each field; a charge's outcome too", async () => {
    const merchantId = 'm_rm_input';
    const refund = await aParkedRefund(merchantId, 100);
    const capture = await aParkedCapture(merchantId);
    const fieldsOf = async (key: string, input: Record<string, unknown>) => {
      const error = await engine
        .resolve({ merchantId, key, ...person, ...input } as ResolveInput)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidRequestError);
      return (error as InvalidRequestError).issues.map((issue) => issue.field);
    };
    const onRefund = (input: Record<string, unknown>) =>
      fieldsOf(refund.key, { operation: 'refund', ...input });

    expect(await onRefund({ outcome: 'declined', providerRefundId: 're' })).toEqual(['outcome']);
    expect(await onRefund({ outcome: 'succeeded' })).toEqual(['providerRefundId']);
    expect(await onRefund({ outcome: 'failed' })).toEqual(['providerRefundId']);
    expect(await onRefund({ outcome: 'succeeded', providerChargeId: 'ch_1' })).toEqual([
      'providerRefundId',
      'providerChargeId',
    ]);
    expect(await onRefund({ outcome: 'cancelled', providerRefundId: 're' })).toEqual([
      'providerRefundId',
    ]);
    expect(
      await onRefund({ outcome: 'succeeded', providerRefundId: 're', failureCode: 'x' }),
    ).toEqual(['failureCode']);
    expect(await onRefund({ outcome: 'failed', providerRefundId: 're', declineCode: 'x' })).toEqual(
      ['declineCode'],
    );
    expect(
      await fieldsOf(capture.key, {
        operation: 'capture',
        outcome: 'succeeded',
        providerRefundId: 're',
      }),
    ).toEqual(['providerCaptureId', 'providerRefundId']);
    expect(
      await fieldsOf(capture.key, {
        operation: 'capture',
        outcome: 'cancelled',
        actor: '',
        reason: undefined,
      }),
    ).toEqual(['actor', 'reason']);
    // A charge key does not take a refund's fields.
    expect(
      await fieldsOf(aKey(), { outcome: 'failed', providerRefundId: 're', failureCode: 'x' }),
    ).toEqual(['outcome', 'providerRefundId', 'failureCode']);

    for (const parked of [refund, capture]) {
      expect((await readKey(merchantId, parked.key))?.recovery_point).toBe('failed');
      expect(await auditCount(merchantId, parked.key)).toBe(0);
    }
    expect(await chargeTotals(refund.chargeId)).toMatchObject({ refund_reserved_minor: 100 });
    expect(await chargeTotals(capture.chargeId)).toMatchObject({ capture_reserved_minor: 1000 });
  });

  it('runs the refund hooks as the engine would, and a hook that throws rolls it all back', async () => {
    const merchantId = 'm_rm_hooks';
    const hooked = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: { refund: loggingHooks('refund'), capture: loggingHooks('capture') },
    });
    const failing = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        refund: {
          complete: () => Promise.reject(new Error('orders service refused')),
        },
      },
    });
    try {
      const ok = await aParkedRefund(merchantId, 100, hooked);
      const gone = await aParkedRefund(merchantId, 100, hooked);
      const rolledBack = await aParkedRefund(merchantId, 100, hooked);

      await hooked.resolve({
        merchantId,
        key: ok.key,
        operation: 'refund',
        outcome: 'failed',
        providerRefundId: 're_hook',
        failureCode: 'lost_card',
        ...person,
      });
      await hooked.resolve({
        merchantId,
        key: gone.key,
        operation: 'refund',
        outcome: 'cancelled',
        ...person,
      });
      const thrown = await failing
        .resolve({
          merchantId,
          key: rolledBack.key,
          operation: 'refund',
          outcome: 'succeeded',
          providerRefundId: 're_rolled_back',
          ...person,
        })
        .catch((e: unknown) => e);

      expect(await hookLog(ok.key)).toEqual([
        {
          kind: 'refund.complete',
          status: 'failed',
          provider_movement_id: 're_hook',
          failure_code: 'lost_card',
          adopted: true,
        },
      ]);
      expect(await hookLog(gone.key)).toMatchObject([{ kind: 'refund.cancel' }]);
      expect(thrown).toMatchObject({ message: 'orders service refused' });
      expect(await readKey(merchantId, rolledBack.key)).toMatchObject({
        recovery_point: 'failed',
        lock_token: null,
        response_body: null,
      });
      expect(await auditCount(merchantId, rolledBack.key)).toBe(0);
      expect(await chargeTotals(rolledBack.chargeId)).toMatchObject({
        refund_reserved_minor: 100,
        refunded_minor: 0,
      });
    } finally {
      await hooked.close();
      await failing.close();
    }
  });
});
