import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createChargeEngine, InvalidRequestError } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, countRows, expireLease, seedInterruptedKey } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const valid = aRequest({ merchantId: 'm_validation' });

const badRequests: Array<[string, string, unknown]> = [
  ['merchantId missing', 'merchantId', { ...valid, merchantId: undefined }],
  ['merchantId empty', 'merchantId', { ...valid, merchantId: '' }],
  ['merchantId blank', 'merchantId', { ...valid, merchantId: '   ' }],
  ['merchantId with a trailing no-break space', 'merchantId', { ...valid, merchantId: 'm\u00a0' }],
  ['customerId with a control character', 'customerId', { ...valid, customerId: 'c\u00851' }],
  ['customerId empty', 'customerId', { ...valid, customerId: '' }],
  ['customerId not a string', 'customerId', { ...valid, customerId: 42 }],
  ['amountMinor zero', 'amountMinor', { ...valid, amountMinor: 0 }],
  ['amountMinor negative', 'amountMinor', { ...valid, amountMinor: -5 }],
  ['amountMinor fractional', 'amountMinor', { ...valid, amountMinor: 10.5 }],
  ['amountMinor unsafe', 'amountMinor', { ...valid, amountMinor: Number.MAX_SAFE_INTEGER + 1 }],
  ['amountMinor a string', 'amountMinor', { ...valid, amountMinor: '2000' }],
  ['amountMinor NaN', 'amountMinor', { ...valid, amountMinor: Number.NaN }],
  ['currency lower case', 'currency', { ...valid, currency: 'ngn' }],
  ['currency too long', 'currency', { ...valid, currency: 'NGNX' }],
  ['currency missing', 'currency', { ...valid, currency: undefined }],
  ['currency not ISO 4217', 'currency', { ...valid, currency: 'XYZ' }],
  ['currency made up', 'currency', { ...valid, currency: 'QQQ' }],
  ['currency withdrawn', 'currency', { ...valid, currency: 'HRK' }],
  ['currency for testing', 'currency', { ...valid, currency: 'XTS' }],
  [
    'metadata key __proto__',
    'metadata.__proto__',
    { ...valid, metadata: JSON.parse('{"__proto__":"x"}') as unknown },
  ],
  ['metadata value not a string', 'metadata.order', { ...valid, metadata: { order: 4821 } }],
  ['metadata value too long', 'metadata.note', { ...valid, metadata: { note: 'x'.repeat(501) } }],
  [
    'metadata with too many keys',
    'metadata',
    {
      ...valid,
      metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])),
    },
  ],
  ['description too long', 'description', { ...valid, description: 'd'.repeat(1001) }],
  ['customerId with a NUL character', 'customerId', { ...valid, customerId: 'c\u00001' }],
  ['merchantId with a NUL character', 'merchantId', { ...valid, merchantId: 'm\u0000' }],
  ['description with a NUL character', 'description', { ...valid, description: 'a\u0000b' }],
  [
    'metadata value with a NUL character',
    'metadata.note',
    { ...valid, metadata: { note: 'x\u0000' } },
  ],
  [
    'metadata value with a lone surrogate',
    'metadata.note',
    { ...valid, metadata: { note: '\ud800' } },
  ],
  [
    'metadata key with a lone surrogate',
    'metadata.k\udc00',
    { ...valid, metadata: { ['k\udc00']: 'v' } },
  ],
  ['unknown field', 'amount', { ...valid, amount: 2000 }],
  ['not an object', 'request', 'charge me'],
];

const badKeys: Array<[string, unknown]> = [
  ['empty', ''],
  ['too long', 'k'.repeat(256)],
  ['non-ASCII', 'clé-ü'],
  ['a control character', 'key\n1'],
  ['not a string', 12345],
];

describe('validation happens before anything is written', () => {
  it.each(badRequests)('rejects %s, naming %s', async (_name, field, request) => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const before = await countRows(db.pool, db.tables.keys);
    const key = aKey();

    const error = await engine.processCharge(key, request as never).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ code: 'invalid_request', httpStatus: 400 });
    expect((error as InvalidRequestError).issues.map((i) => i.field)).toContain(field);
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
    expect(provider.calls).toMatchObject({ createCharge: 0, findCharge: 0 });
    // The key was not consumed: the corrected request goes through with it.
    const outcome = await engine.processCharge(key, valid);
    expect(outcome.replayed).toBe(false);
  });

  it.each(badKeys)('rejects a key that is %s', async (_name, key) => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const before = await countRows(db.pool, db.tables.keys);

    const error = await engine.processCharge(key as string, valid).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as InvalidRequestError).issues.map((i) => i.field)).toContain('idempotencyKey');
    expect(await countRows(db.pool, db.tables.keys)).toBe(before);
    expect(provider.calls.createCharge).toBe(0);
  });

  it('accepts the longest key and every printable ASCII character', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join('');
    await expect(engine.processCharge('k'.repeat(255), valid)).resolves.toMatchObject({
      status: 'succeeded',
    });
    await expect(engine.processCharge(printable, valid)).resolves.toMatchObject({
      status: 'succeeded',
    });
    // A well-formed surrogate pair is fine; only unpaired halves are refused.
    await expect(
      engine.processCharge(aKey(), { ...valid, metadata: { note: 'paid \u{1F600}' } }),
    ).resolves.toMatchObject({ status: 'succeeded' });
  });

  it.each(['XCG', 'ANG'])(
    'charges in %s (XCG: ISO 4217 since 2025; ANG: still in circulation)',
    async (currency) => {
      const provider = createFakeProvider();
      const engine = createChargeEngine({ pool: db.pgPool, provider });
      const key = aKey();

      const outcome = await engine.processCharge(key, { ...valid, currency });
      const replay = await engine.processCharge(key, { ...valid, currency });

      expect(outcome).toMatchObject({ status: 'succeeded', replayed: false });
      expect(replay).toMatchObject({ replayed: true, body: outcome.body });
      expect(provider.ledger()).toEqual([expect.objectContaining({ currency })]);
    },
  );

  it('reports every invalid field at once', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const error = (await engine
      .processCharge('', { ...valid, amountMinor: 0, currency: 'x' })
      .catch((e: unknown) => e)) as InvalidRequestError;
    expect(error.issues.map((i) => i.field).sort()).toEqual(
      ['amountMinor', 'currency', 'idempotencyKey'].sort(),
    );
  });

  it('treats empty metadata as absent: a retry that drops it is a replay, not a reuse', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const key = aKey();
    const first = await engine.processCharge(key, { ...valid, metadata: {} });
    const retry = await engine.processCharge(key, valid);
    expect(retry.replayed).toBe(true);
    expect(retry.chargeId).toBe(first.chargeId);
  });

  it('keeps metadata keys named like Object.prototype members as data', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const key = aKey();
    const metadata = JSON.parse('{"constructor":"c","toString":"t"}') as Record<string, string>;
    const first = await engine.processCharge(key, { ...valid, metadata });
    await expect(engine.processCharge(key, valid)).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
    await expect(engine.processCharge(key, { ...valid, metadata })).resolves.toMatchObject({
      replayed: true,
      chargeId: first.chargeId,
    });
  });
});

describe('counts given to sweep, reap and listStuck', () => {
  const refusedCount = (field: string) =>
    expect.objectContaining({
      code: 'invalid_request',
      issues: [{ field, message: 'must be a whole number from 1 up' }],
    }) as unknown;

  it('a sweep refuses a limit or concurrency under 1, fractional or infinite, and takes no key', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      sweepGraceMs: 0,
    });
    const merchantId = 'm_validation_counts';
    const key = aKey();
    await seedInterruptedKey(db.pool, db.tables, key, aRequest({ merchantId }), 'reserved');
    await expireLease(db.pool, db.tables, merchantId, key);

    for (const limit of [0, -1, 1.5, Number.POSITIVE_INFINITY, Number.NaN]) {
      await expect(engine.sweep({ limit })).rejects.toEqual(refusedCount('limit'));
    }
    await expect(engine.sweep({ concurrency: 0 })).rejects.toEqual(refusedCount('concurrency'));
    const point = async () =>
      db.pool.oneFirst(sql.type(z.object({ recovery_point: z.string() }))`
        SELECT recovery_point FROM ${db.tables.keys} WHERE merchant_id = ${merchantId} AND key = ${key}`);
    expect(await point()).toBe('reserved');

    // The same key is taken by a sweep with a count it accepts.
    expect((await engine.sweep({ limit: 1 })).examined).toBe(1);
    expect(await point()).not.toBe('reserved');
  });

  it('a reap refuses a limit or batch size it cannot take; listStuck a limit', async () => {
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    await expect(engine.reap({ limit: -5 })).rejects.toEqual(refusedCount('limit'));
    await expect(engine.reap({ batchSize: 0.5 })).rejects.toEqual(refusedCount('batchSize'));
    await expect(engine.listStuck({ limit: 0 })).rejects.toEqual(refusedCount('limit'));
    await expect(engine.listStuck({ limit: 2 ** 60 })).rejects.toEqual(refusedCount('limit'));
    await expect(engine.reap({ limit: 1, batchSize: 1 })).resolves.toBeGreaterThanOrEqual(0);
    await expect(engine.listStuck({ limit: 1 })).resolves.toEqual(expect.any(Array));
  });
});
