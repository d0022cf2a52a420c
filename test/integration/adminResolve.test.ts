import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  InvalidRequestError,
  KeyNotResolvableError,
  type ChargeEngine,
  type ChargeHooks,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { failKey } from '../../src/store/failKey.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, readCharges, readKey, seedInterruptedKey } from '../support/charges.js';

let db: TestDatabase;
let engine: ChargeEngine;

/** The caller's own table, written by the hooks: what committed shows here. */
const hookRow = z.object({
  kind: z.string(),
  status: z.string().nullable(),
  provider_charge_id: z.string().nullable(),
  decline_code: z.string().nullable(),
  adopted: z.boolean().nullable(),
});

const hooks: ChargeHooks = {
  complete: async (tx, ctx) => {
    await tx.query(
      'INSERT INTO hook_log (key, kind, status, provider_charge_id, decline_code, adopted) VALUES ($1, $2, $3, $4, $5, $6)',
      [ctx.key, 'complete', ctx.status, ctx.providerChargeId, ctx.declineCode, ctx.adopted],
    );
  },
  cancel: async (tx, ctx) => {
    await tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, 'cancel']);
  },
};

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`
    CREATE TABLE hook_log (key text NOT NULL, kind text NOT NULL, status text,
      provider_charge_id text, decline_code text, adopted boolean)`);
  engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider(), hooks });
});
afterAll(async () => {
  await engine.close();
  await db.drop();
});

async function hookLog(key: string) {
  return db.pool.any(sql.type(hookRow)`
    SELECT kind, status, provider_charge_id, decline_code, adopted FROM hook_log WHERE key = ${key}`);
}

async function auditCount(merchantId: string, key: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.adminActions}
    WHERE merchant_id = ${merchantId} AND key = ${key}`);
}

/** A key at `reserved` parked where the engine parks keys (`failKey`), with a reason. */
async function aParkedKey(merchantId: string, reason = 'the provider could not answer') {
  const key = aKey();
  const request = aRequest({ merchantId, metadata: { order: '4821' } });
  const seeded = await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');
  await db.pool.query(sql.unsafe`
    UPDATE ${db.tables.keys} SET lock_token = NULL, locked_until = NULL
    WHERE merchant_id = ${merchantId} AND key = ${key}`);
  const scoped = { merchantId, operation: 'charge', key };
  expect(await failKey(db.pool, db.tables, { ...scoped, lockToken: randomUUID(), reason })).toBe(
    true,
  );
  return { key, request, ...seeded };
}

const person = { actor: 'ada@example.com', reason: 'provider dashboard shows ch_ok' };

describe('resolve', () => {
  it('succeeded: stores the outcome as the engine would, runs the complete hook in its commit, audits', async () => {
    const merchantId = 'm_res_ok';
    const parked = await aParkedKey(merchantId);

    const result = await engine.resolve({
      merchantId,
      key: parked.key,
      outcome: 'succeeded',
      providerChargeId: 'ch_ok_1',
      ...person,
    });

    expect(result.outcome).toMatchObject({
      status: 'succeeded',
      httpStatus: 201,
      replayed: false,
      chargeId: parked.chargeId,
      providerChargeId: 'ch_ok_1',
    });
    const body = JSON.parse(result.outcome.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: parked.chargeId,
      object: 'charge',
      status: 'succeeded',
      merchantId,
      amountMinor: parked.request.amountMinor,
      metadata: { order: '4821' },
      providerChargeId: 'ch_ok_1',
      declineCode: null,
    });
    // The same fields in the same order as a charge the engine completed itself.
    const charged = await engine.processCharge(aKey(), aRequest({ merchantId }));
    expect(Object.keys(body)).toEqual(Object.keys(JSON.parse(charged.body) as object));

    const row = await readKey(db.pool, db.tables, merchantId, parked.key);
    expect(row).toMatchObject({
      recovery_point: 'completed',
      lock_token: null,
      response_status: 201,
      response_body: result.outcome.body,
    });
    const charge = (await readCharges(db.pool, db.tables, merchantId)).find(
      (c) => c.id === parked.chargeId,
    );
    expect(charge).toMatchObject({ status: 'succeeded', provider_charge_id: 'ch_ok_1' });
    expect(await hookLog(parked.key)).toEqual([
      {
        kind: 'complete',
        status: 'succeeded',
        provider_charge_id: 'ch_ok_1',
        decline_code: null,
        adopted: true,
      },
    ]);
    // A retry replays it, byte for byte.
    const replay = await engine.processCharge(parked.key, parked.request);
    expect(replay).toMatchObject({ replayed: true, body: result.outcome.body });

    const found = await engine.inspect({ merchantId, key: parked.key });
    expect(found?.audit).toEqual([result.audit]);
    expect(result.audit).toMatchObject({
      action: 'resolve',
      result: 'succeeded',
      ...person,
      chargeId: parked.chargeId,
      movementId: null,
      providerChargeId: 'ch_ok_1',
      parkedReason: 'the provider could not answer',
    });
    expect(result.audit.parkedAt).toEqual(found?.failedAt);
    expect(found?.history.map((step) => step.event)).toEqual([
      'claimed',
      'reserved',
      'parked',
      'resolved',
      'completed',
    ]);
    expect(found?.history[3]?.detail).toBe('succeeded by ada@example.com');
  });

  it('declined: 402 with the decline code, on the charge and in the hook', async () => {
    const merchantId = 'm_res_declined';
    const parked = await aParkedKey(merchantId);

    const { outcome } = await engine.resolve({
      merchantId,
      key: parked.key,
      outcome: 'declined',
      providerChargeId: 'ch_no_1',
      declineCode: 'insufficient_funds',
      ...person,
    });

    expect(outcome).toMatchObject({ status: 'declined', httpStatus: 402 });
    expect(JSON.parse(outcome.body)).toMatchObject({
      status: 'declined',
      declineCode: 'insufficient_funds',
    });
    const found = await engine.inspect({ merchantId, key: parked.key });
    expect(found?.charge).toMatchObject({
      status: 'declined',
      providerChargeId: 'ch_no_1',
      declineCode: 'insufficient_funds',
    });
    expect(await hookLog(parked.key)).toEqual([
      {
        kind: 'complete',
        status: 'declined',
        provider_charge_id: 'ch_no_1',
        decline_code: 'insufficient_funds',
        adopted: true,
      },
    ]);
  });

  it('cancelled: 410, no provider charge, and the cancel hook releases the reservation', async () => {
    const merchantId = 'm_res_cancelled';
    const parked = await aParkedKey(merchantId);

    const { outcome } = await engine.resolve({
      merchantId,
      key: parked.key,
      outcome: 'cancelled',
      ...person,
    });

    expect(outcome).toMatchObject({ status: 'cancelled', httpStatus: 410, providerChargeId: null });
    expect(await hookLog(parked.key)).toEqual([
      { kind: 'cancel', status: null, provider_charge_id: null, decline_code: null, adopted: null },
    ]);
    const row = await readKey(db.pool, db.tables, merchantId, parked.key);
    expect(row).toMatchObject({ recovery_point: 'completed', response_status: 410 });
    expect((await engine.processCharge(parked.key, parked.request)).status).toBe('cancelled');
  });

  it('a hook that throws rolls everything back: still parked, nothing recorded, its error passes through', async () => {
    const merchantId = 'm_res_hook_throws';
    const parked = await aParkedKey(merchantId);
    const failing = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      hooks: {
        complete: async (tx, ctx) => {
          await hooks.complete?.(tx, ctx);
          throw new Error('orders service refused');
        },
      },
    });
    try {
      await expect(
        failing.resolve({
          merchantId,
          key: parked.key,
          outcome: 'succeeded',
          providerChargeId: 'ch_rollback',
          ...person,
        }),
      ).rejects.toThrow('orders service refused');
    } finally {
      await failing.close();
    }

    expect(await readKey(db.pool, db.tables, merchantId, parked.key)).toMatchObject({
      recovery_point: 'failed',
      lock_token: null,
      response_body: null,
    });
    expect(await hookLog(parked.key)).toEqual([]);
    expect(await auditCount(merchantId, parked.key)).toBe(0);
    const charge = (await readCharges(db.pool, db.tables, merchantId))[0];
    expect(charge).toMatchObject({ status: 'reserved', provider_charge_id: null });
    // And the key can still be resolved.
    const { outcome } = await engine.resolve({
      merchantId,
      key: parked.key,
      outcome: 'succeeded',
      providerChargeId: 'ch_rollback',
      ...person,
    });
    expect(outcome.status).toBe('succeeded');
  });

  it('never on a completed key: a second resolve is refused and changes nothing', async () => {
    const merchantId = 'm_res_twice';
    const parked = await aParkedKey(merchantId);
    const first = await engine.resolve({
      merchantId,
      key: parked.key,
      outcome: 'succeeded',
      providerChargeId: 'ch_twice',
      ...person,
    });

    const again = await engine
      .resolve({ merchantId, key: parked.key, outcome: 'cancelled', ...person })
      .catch((error: unknown) => error);
    const completedByEngine = await engine.processCharge(aKey(), aRequest({ merchantId }));
    const onCompleted = await engine
      .resolve({
        merchantId,
        key: (await engine.list({ merchantId, point: 'completed', limit: 10 })).keys.find(
          (k) => k.chargeId === completedByEngine.chargeId,
        )!.key,
        outcome: 'cancelled',
        ...person,
      })
      .catch((error: unknown) => error);

    expect(again).toBeInstanceOf(KeyNotResolvableError);
    expect(again).toMatchObject({
      code: 'key_not_resolvable',
      httpStatus: 409,
      reason: 'completed',
      recoveryPoint: 'completed',
    });
    expect(onCompleted).toMatchObject({ reason: 'completed', recoveryPoint: 'completed' });
    expect(await readKey(db.pool, db.tables, merchantId, parked.key)).toMatchObject({
      response_body: first.outcome.body,
    });
    expect(await auditCount(merchantId, parked.key)).toBe(1);
    expect(await hookLog(parked.key)).toHaveLength(1);
  });

  it('refuses a key that is not parked, and one that does not exist', async () => {
    const merchantId = 'm_res_not_parked';
    const key = aKey();
    await seedInterruptedKey(db.pool, db.tables, key, aRequest({ merchantId }), 'reserved');

    const atWork = await engine
      .resolve({ merchantId, key, outcome: 'cancelled', ...person })
      .catch((error: unknown) => error);
    const missing = await engine
      .resolve({ merchantId, key: aKey(), outcome: 'cancelled', ...person })
      .catch((error: unknown) => error);

    expect(atWork).toMatchObject({ reason: 'not_parked', recoveryPoint: 'reserved' });
    expect(missing).toMatchObject({ reason: 'no_such_key', recoveryPoint: null });
    expect(await readKey(db.pool, db.tables, merchantId, key)).toMatchObject({
      recovery_point: 'reserved',
    });
    expect(await auditCount(merchantId, key)).toBe(0);
  });

  it('refuses a key parked before its charge intent: there is nothing to resolve, requeue it', async () => {
    const merchantId = 'm_res_no_intent';
    const key = aKey();
    await seedInterruptedKey(db.pool, db.tables, key, aRequest({ merchantId }), 'started');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET recovery_point = 'failed', lock_token = NULL
      WHERE merchant_id = ${merchantId} AND key = ${key}`);

    await expect(
      engine.resolve({ merchantId, key, outcome: 'cancelled', ...person }),
    ).rejects.toMatchObject({ reason: 'no_charge_intent' });
    expect(await readKey(db.pool, db.tables, merchantId, key)).toMatchObject({
      recovery_point: 'failed',
      lock_token: null,
    });
    expect(await engine.requeue({ merchantId, key, ...person })).toBe(true);
    expect((await readKey(db.pool, db.tables, merchantId, key))?.recovery_point).toBe('started');
  });

  it('refuses bad input before writing anything, naming each field', async () => {
    const merchantId = 'm_res_input';
    const parked = await aParkedKey(merchantId);
    const fieldsOf = async (input: Record<string, unknown>) => {
      const error = await engine
        .resolve({ merchantId, key: parked.key, ...input } as Parameters<
          ChargeEngine['resolve']
        >[0])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidRequestError);
      return (error as InvalidRequestError).issues.map((issue) => issue.field);
    };

    expect(await fieldsOf({ outcome: 'succeeded', ...person })).toEqual(['providerChargeId']);
    expect(await fieldsOf({ outcome: 'declined', ...person })).toEqual(['providerChargeId']);
    expect(
      await fieldsOf({ outcome: 'succeeded', providerChargeId: 'ch', declineCode: 'x', ...person }),
    ).toEqual(['declineCode']);
    expect(await fieldsOf({ outcome: 'cancelled', providerChargeId: 'ch', ...person })).toEqual([
      'providerChargeId',
    ]);
    expect(await fieldsOf({ outcome: 'refunded', ...person })).toEqual(['outcome']);
    expect(await fieldsOf({ outcome: 'cancelled', actor: ' ', reason: '' })).toEqual([
      'actor',
      'reason',
    ]);
    expect(await fieldsOf({ outcome: 'cancelled' })).toEqual(['actor', 'reason']);
    // A provider's id or code is stored and compared as given: a pasted space would be another id.
    expect(await fieldsOf({ outcome: 'succeeded', providerChargeId: ' ch_1 ', ...person })).toEqual(
      ['providerChargeId'],
    );
    expect(
      await fieldsOf({
        outcome: 'declined',
        providerChargeId: 'ch_1',
        declineCode: 'x\n',
        ...person,
      }),
    ).toEqual(['declineCode']);
    // A field it does not take (from JavaScript, misspelt) is refused, not ignored.
    expect(await fieldsOf({ outcome: 'cancelled', operaton: 'refund', foo: 1, ...person })).toEqual(
      ['operaton', 'foo'],
    );
    const refusal = (await engine
      .requeue({ merchantId, key: parked.key, ...person, actr: 'x' } as Parameters<
        ChargeEngine['requeue']
      >[0])
      .catch((e: unknown) => e)) as InvalidRequestError;
    expect(refusal.issues).toEqual([{ field: 'actr', message: 'is not a known field' }]);
    expect(await readKey(db.pool, db.tables, merchantId, parked.key)).toMatchObject({
      recovery_point: 'failed',
    });
    expect(await auditCount(merchantId, parked.key)).toBe(0);
  });

  it("refuses a provider charge id recorded for another of the merchant's charges", async () => {
    const merchantId = 'm_res_duplicate';
    const charged = await engine.processCharge(aKey(), aRequest({ merchantId }));
    const parked = await aParkedKey(merchantId);

    const error = await engine
      .resolve({
        merchantId,
        key: parked.key,
        outcome: 'succeeded',
        providerChargeId: charged.providerChargeId!,
        ...person,
      })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).issues).toEqual([
      {
        field: 'providerChargeId',
        message: 'is already recorded for another charge of this merchant',
      },
    ]);
    expect(await readKey(db.pool, db.tables, merchantId, parked.key)).toMatchObject({
      recovery_point: 'failed',
    });
    expect(await auditCount(merchantId, parked.key)).toBe(0);
    expect(await hookLog(parked.key)).toEqual([]);
  });
});

describe('requeue', () => {
  it('audits who and why, and inspect shows the park it ended', async () => {
    const merchantId = 'm_rq_audit';
    const parked = await aParkedKey(merchantId, 'a hook kept failing');

    expect(
      await engine.requeue({
        merchantId,
        key: parked.key,
        actor: 'grace',
        reason: 'orders service is back',
      }),
    ).toBe(true);
    expect(await engine.requeue({ merchantId, key: parked.key, actor: 'grace', reason: 'x' })).toBe(
      false,
    );

    const found = await engine.inspect({ merchantId, key: parked.key });
    expect(found).toMatchObject({
      recoveryPoint: 'reserved',
      attempts: 0,
      lastError: 'requeued; was parked: a hook kept failing',
    });
    expect(found?.audit).toHaveLength(1);
    expect(found?.audit[0]).toMatchObject({
      action: 'requeue',
      result: 'reserved',
      actor: 'grace',
      reason: 'orders service is back',
      parkedReason: 'a hook kept failing',
      providerChargeId: null,
    });
    expect(found?.audit[0]?.parkedAt).toEqual(found?.failedAt);
    expect(found?.history.map((step) => step.event)).toEqual([
      'claimed',
      'reserved',
      'parked',
      'requeued',
    ]);
  });

  it('refuses a requeue that does not say who and why: audited like a resolve, nothing written', async () => {
    const merchantId = 'm_rq_plain';
    const parked = await aParkedKey(merchantId);

    const refusal = await engine
      .requeue({ merchantId, key: parked.key } as Parameters<ChargeEngine['requeue']>[0])
      .catch((error: unknown) => error);

    expect(refusal).toBeInstanceOf(InvalidRequestError);
    expect(refusal).toMatchObject({
      issues: [
        { field: 'actor', message: 'is required' },
        { field: 'reason', message: 'is required' },
      ],
    });
    const found = await engine.inspect({ merchantId, key: parked.key });
    expect(found?.recoveryPoint).toBe('failed');
    expect(found?.audit).toEqual([]);
  });

  it('parked, requeued, parked again, resolved: every step in the history', async () => {
    const merchantId = 'm_rq_history';
    const parked = await aParkedKey(merchantId, 'first park');
    expect(await engine.requeue({ merchantId, key: parked.key, ...person })).toBe(true);
    const scoped = { merchantId, operation: 'charge', key: parked.key };
    expect(
      await failKey(db.pool, db.tables, {
        ...scoped,
        lockToken: randomUUID(),
        reason: 'second park',
      }),
    ).toBe(true);
    await engine.resolve({ ...scoped, outcome: 'cancelled', ...person });

    const found = await engine.inspect({ merchantId, key: parked.key });

    expect(found?.history.map((step) => [step.event, step.detail])).toEqual([
      ['claimed', null],
      ['reserved', null],
      ['parked', 'first park'],
      ['requeued', 'to reserved by ada@example.com'],
      ['parked', 'second park'],
      ['resolved', 'cancelled by ada@example.com'],
      ['completed', 'cancelled'],
    ]);
    expect(found?.audit.map((entry) => entry.action)).toEqual(['requeue', 'resolve']);
  });

  it('refuses a malformed actor or reason', async () => {
    const merchantId = 'm_rq_input';
    const parked = await aParkedKey(merchantId);

    await expect(
      engine.requeue({ merchantId, key: parked.key, actor: '', reason: 'x'.repeat(2_001) }),
    ).rejects.toMatchObject({
      issues: [
        { field: 'actor', message: expect.any(String) as string },
        { field: 'reason', message: expect.any(String) as string },
      ],
    });
    expect((await readKey(db.pool, db.tables, merchantId, parked.key))?.recovery_point).toBe(
      'failed',
    );
  });
});
