import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  InvalidRequestError,
  ProviderTransientError,
  type ChargeEngine,
  type KeyInspection,
  type KeySummary,
  type PaymentProvider,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { failKey } from '../../src/store/failKey.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, seedAbandonedKeys, seedInterruptedKey } from '../support/charges.js';
import { closedPortUrl } from '../support/closedPortUrl.js';

let db: TestDatabase;
let engine: ChargeEngine;
beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
});
afterAll(async () => {
  await engine.close();
  await db.drop();
});

const events = (found: KeyInspection | null) => found?.history.map((step) => step.event);

/** A provider that is down: a sweep past `maxAttempts` parks what it cannot settle. */
const downProvider: PaymentProvider = {
  createCharge: () => Promise.reject(new ProviderTransientError('http_503')),
  findCharge: () => Promise.reject(new ProviderTransientError('http_503')),
};

/** Parks keys of a merchant where the engine parks them (`failKey`), with `reason`. */
async function park(merchantId: string, keys: readonly string[], reason: string) {
  await db.pool.query(sql.unsafe`
    UPDATE ${db.tables.keys} SET lock_token = NULL, locked_until = NULL
    WHERE merchant_id = ${merchantId} AND key = ANY(${sql.array([...keys], 'text')})`);
  for (const key of keys) {
    const scoped = { merchantId, operation: 'charge', key };
    expect(await failKey(db.pool, db.tables, { ...scoped, lockToken: randomUUID(), reason })).toBe(
      true,
    );
  }
}

describe('inspect', () => {
  it('a key at started: request, lease, no charge yet', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_started', metadata: { order: '7' } });
    const seeded = await seedInterruptedKey(db.pool, db.tables, key, request, 'started');

    const found = await engine.inspect({ merchantId: request.merchantId, key });

    expect(found).toMatchObject({
      merchantId: request.merchantId,
      operation: 'charge',
      key,
      recoveryPoint: 'started',
      request: { ...request },
      attempts: 1,
      lease: { held: false, remainingMs: 0 },
      charge: null,
      outcome: null,
      completedAt: null,
      failedAt: null,
      audit: [],
    });
    expect(found?.lease.until).toBeInstanceOf(Date);
    expect(events(found)).toEqual(['claimed']);
    expect(seeded.chargeId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a key at reserved: the charge intent and when it was written', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_reserved' });
    const { chargeId, providerKey } = await seedInterruptedKey(
      db.pool,
      db.tables,
      key,
      request,
      'reserved',
    );

    const found = await engine.inspect({ merchantId: request.merchantId, key });

    expect(found).toMatchObject({
      recoveryPoint: 'reserved',
      charge: {
        id: chargeId,
        status: 'reserved',
        amountMinor: request.amountMinor,
        currency: request.currency,
        customerId: request.customerId,
        providerKey,
        providerChargeId: null,
        declineCode: null,
      },
      outcome: null,
    });
    expect(events(found)).toEqual(['claimed', 'reserved']);
  });

  it('a key held by an attempt shows its lease', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_held' });
    await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET locked_until = now() + interval '1 hour'
      WHERE merchant_id = ${request.merchantId} AND key = ${key}`);

    const found = await engine.inspect({ merchantId: request.merchantId, key });

    expect(found?.lease.held).toBe(true);
    expect(found?.lease.remainingMs).toBeGreaterThan(3_000_000);
    expect(found?.lease.remainingMs).toBeLessThanOrEqual(3_600_000);
  });

  it('a completed key: the stored outcome byte for byte, and its history in order', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_completed' });
    const outcome = await engine.processCharge(key, request);

    const found = await engine.inspect({ merchantId: request.merchantId, key });

    expect(found).toMatchObject({
      recoveryPoint: 'completed',
      outcome: { httpStatus: 201, body: outcome.body },
      charge: {
        id: outcome.chargeId,
        status: 'succeeded',
        providerChargeId: outcome.providerChargeId,
      },
      lease: { held: false, until: null },
    });
    expect(events(found)).toEqual(['claimed', 'reserved', 'completed']);
    expect(found?.history.at(-1)?.detail).toBe('succeeded');
    const times = found!.history.map((step) => step.at.getTime());
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('a key the sweeper parked: failed, why, and when', async () => {
    const request = aRequest({ merchantId: 'm_insp_failed' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    const parker = createChargeEngine({
      pool: db.pgPool,
      provider: downProvider,
      sweepGraceMs: 0,
      maxAttempts: 1,
    });
    try {
      // Earlier tests' abandoned keys may be parked by this pass too.
      expect((await parker.sweep()).failed).toBeGreaterThanOrEqual(1);
    } finally {
      await parker.close();
    }

    const found = await engine.inspect({ merchantId: request.merchantId, key: seed!.key });

    expect(found?.recoveryPoint).toBe('failed');
    expect(found?.lastError).toMatch(/provider could not answer.*http_503/);
    expect(found?.failedAt).toBeInstanceOf(Date);
    expect(found?.attempts).toBe(2);
    expect(events(found)).toEqual(['claimed', 'reserved', 'parked']);
    expect(found?.history.at(-1)).toEqual({
      at: found?.failedAt,
      event: 'parked',
      detail: found?.lastError,
    });
    const stuck = (await engine.listStuck()).find((s) => s.key === seed!.key);
    expect(stuck?.failedAt).toEqual(found?.failedAt);
  });

  it('a tombstone (expired): no request, no response, the charge row stays', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_expired' });
    const outcome = await engine.processCharge(key, request);
    // Its whole life moved 100 hours back, past the default retention.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = created_at - interval '100 hours',
        completed_at = completed_at - interval '100 hours'
      WHERE merchant_id = ${request.merchantId} AND key = ${key}`);
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET created_at = created_at - interval '100 hours'
      WHERE merchant_id = ${request.merchantId} AND id = ${outcome.chargeId}::uuid`);
    expect(await engine.reap()).toBeGreaterThanOrEqual(1);

    const found = await engine.inspect({ merchantId: request.merchantId, key });

    expect(found).toMatchObject({
      recoveryPoint: 'expired',
      request: null,
      outcome: null,
      charge: { id: outcome.chargeId, status: 'succeeded' },
    });
    expect(events(found)).toEqual(['claimed', 'reserved', 'completed', 'expired']);
  });

  it('another operation is another key; no such key is null', async () => {
    const key = aKey();
    const request = aRequest({ merchantId: 'm_insp_scope' });
    await engine.processCharge(key, request);

    expect(await engine.inspect({ merchantId: request.merchantId, key, operation: 'payout' })).toBe(
      null,
    );
    expect(await engine.inspect({ merchantId: 'm_other', key })).toBe(null);
    expect(await engine.inspect({ merchantId: request.merchantId, key })).not.toBe(null);
  });

  it('refuses a malformed target before reading anything', async () => {
    const refusal = await engine
      .inspect({ merchantId: '', key: 'bad\nkey', operation: 'Not An Operation' })
      .catch((error: unknown) => error);

    expect(refusal).toBeInstanceOf(InvalidRequestError);
    expect((refusal as InvalidRequestError).issues.map((issue) => issue.field)).toEqual([
      'merchantId',
      'key',
      'operation',
    ]);
  });

  it('refuses a field it does not take, rather than reading the key as no such key', async () => {
    const key = aKey();
    await engine.processCharge(key, aRequest({ merchantId: 'm_inspect_typo' }));
    const refusal = await engine
      .inspect({ merchantId: 'm_inspect_typo', key, operaton: 'charge' } as Parameters<
        ChargeEngine['inspect']
      >[0])
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidRequestError);
    expect((refusal as InvalidRequestError).issues).toEqual([
      { field: 'operaton', message: 'is not a known field' },
    ]);
  });

  it('refuses a merchant id with a space at an edge, as processCharge does, not as no such key', async () => {
    const key = aKey();
    await engine.processCharge(key, aRequest({ merchantId: 'm_inspect_pasted' }));

    for (const merchantId of [' m_inspect_pasted', 'm_inspect_pasted ']) {
      const refusal = await engine.inspect({ merchantId, key }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(InvalidRequestError);
      expect((refusal as InvalidRequestError).issues).toEqual([
        { field: 'merchantId', message: 'must not start or end with whitespace' },
      ]);
      await expect(
        engine.requeue({ merchantId, key, actor: 'ada', reason: 'pasted' }),
      ).rejects.toBeInstanceOf(InvalidRequestError);
    }
  });
});

describe('list', () => {
  /** Every key of a listing, page after page; the cursors seen on the way. */
  async function allPages(options: Parameters<ChargeEngine['list']>[0]) {
    const keys: KeySummary[] = [];
    const pages: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await engine.list({ ...options, cursor });
      keys.push(...page.keys);
      pages.push(page.keys.length);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return { keys, pages };
  }

  it('pages through more than two pages by keyset, in created order, with filters', async () => {
    const merchantId = 'm_list_pages';
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 11, aRequest({ merchantId }));
    // Spread over time, three at the very same instant (ties are broken by key), and
    // another merchant's keys between them, which a merchant filter must leave out.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} k SET created_at = '2020-01-01T00:00:00Z'::timestamptz
        + (CASE WHEN s.n <= 3 THEN 0 ELSE s.n END) * interval '1 minute'
      FROM unnest(${sql.array(
        seeds.map((s) => s.key),
        'text',
      )}) WITH ORDINALITY AS s(key, n)
      WHERE k.merchant_id = ${merchantId} AND k.key = s.key`);
    await seedAbandonedKeys(db.pool, db.tables, 3, aRequest({ merchantId: 'm_list_other' }));
    await park(
      merchantId,
      seeds.slice(0, 5).map((s) => s.key),
      'the provider could not answer',
    );

    const all = await allPages({ merchantId, limit: 4 });
    const failed = await allPages({ merchantId, point: 'failed', limit: 2 });
    const reserved = await allPages({ merchantId, point: 'reserved', limit: 2 });

    expect(all.pages).toEqual([4, 4, 3]);
    expect(all.keys.map((k) => k.merchantId)).toEqual(Array(11).fill(merchantId));
    const created = all.keys.map((k) => k.createdAt.getTime());
    expect(created).toEqual([...created].sort((a, b) => a - b));
    const tied = all.keys.slice(0, 3).map((k) => k.key);
    expect(tied).toEqual([...tied].sort());
    expect(new Set(all.keys.map((k) => k.key))).toEqual(new Set(seeds.map((s) => s.key)));

    expect(failed.pages).toEqual([2, 2, 1]);
    expect(failed.keys.every((k) => k.recoveryPoint === 'failed')).toBe(true);
    expect(failed.keys[0]).toMatchObject({
      chargeStatus: 'reserved',
      lastError: 'the provider could not answer',
      leaseHeld: false,
    });
    expect(reserved.keys).toHaveLength(6);
    expect(reserved.keys.every((k) => k.recoveryPoint === 'reserved')).toBe(true);
  });

  it('olderThan counts from when a key was claimed', async () => {
    const merchantId = 'm_list_age';
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 3, aRequest({ merchantId }));
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = now() - interval '2 hours'
      WHERE merchant_id = ${merchantId} AND key = ${seeds[0]!.key}`);

    const old = await engine.list({ merchantId, olderThan: 3_600_000, limit: 10 });

    expect(old.keys.map((k) => k.key)).toEqual([seeds[0]!.key]);
    expect(old.nextCursor).toBe(null);
  });

  it('a listing without a merchant covers every merchant and operation', async () => {
    const mine = await seedAbandonedKeys(
      db.pool,
      db.tables,
      2,
      aRequest({ merchantId: 'm_list_a' }),
    );
    const theirs = await seedAbandonedKeys(
      db.pool,
      db.tables,
      2,
      aRequest({ merchantId: 'm_list_b' }),
      'payout',
    );

    const { keys } = await allPages({ limit: 7 });
    const payouts = await allPages({ limit: 7, operation: 'payout' });

    const listed = new Set(keys.map((k) => k.key));
    for (const seed of [...mine, ...theirs]) expect(listed).toContain(seed.key);
    expect(payouts.keys.map((k) => k.key).sort()).toEqual(theirs.map((s) => s.key).sort());
  });

  it('refuses a bad limit, point, age or cursor before reading anything', async () => {
    const issuesOf = async (options: unknown) => {
      const error = await engine
        .list(options as Parameters<ChargeEngine['list']>[0])
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidRequestError);
      return (error as InvalidRequestError).issues.map((issue) => issue.field);
    };

    expect(await issuesOf({ limit: 0 })).toEqual(['limit']);
    expect(await issuesOf({ limit: 1001 })).toEqual(['limit']);
    expect(await issuesOf({})).toEqual(['limit']);
    expect(await issuesOf({ limit: 5, point: 'lost' })).toEqual(['point']);
    expect(await issuesOf({ limit: 5, olderThan: -1 })).toEqual(['olderThan']);
    expect(await issuesOf({ limit: 5, cursor: 'not a cursor' })).toEqual(['cursor']);
    expect(await issuesOf({ limit: 5, merchantId: 'm_1 ' })).toEqual(['merchantId']);
    // Misspelt, a filter would otherwise be dropped: every merchant's keys listed.
    expect(await issuesOf({ limit: 5, merchant: 'm_1' })).toEqual(['merchant']);
    expect(await issuesOf({ limit: 5, pointt: 'failed' })).toEqual(['pointt']);
    const forged = Buffer.from(JSON.stringify(['yesterday', 'm', 'charge', 'k'])).toString(
      'base64url',
    );
    expect(await issuesOf({ limit: 5, cursor: forged })).toEqual(['cursor']);
  });

  /** The issues of a listing refused as bad input (it fails the test when not refused so). */
  async function refusal(listing: ChargeEngine, options: Parameters<ChargeEngine['list']>[0]) {
    const error = await listing.list(options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    return (error as InvalidRequestError).issues;
  }

  it('refuses a cursor under other filters than it was taken with, before reading anything', async () => {
    const merchantId = 'm_list_bound';
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 6, aRequest({ merchantId }));
    await seedAbandonedKeys(db.pool, db.tables, 2, aRequest({ merchantId: 'm_list_bound_b' }));
    await park(
      merchantId,
      seeds.slice(0, 3).map((s) => s.key),
      'stuck',
    );
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = now() - interval '2 hours'
      WHERE merchant_id = ${merchantId}`);
    const taken = { merchantId, point: 'failed', olderThan: 3_600_000 } as const;
    const { nextCursor: cursor } = await engine.list({ ...taken, limit: 2 });
    expect(cursor).not.toBe(null);
    // An engine whose database is out of reach: a refusal from it read nothing.
    const unreachable = createChargeEngine({
      pool: await closedPortUrl(),
      provider: createFakeProvider(),
    });

    try {
      const others = [
        { ...taken, point: 'completed' },
        { merchantId, olderThan: taken.olderThan },
        { ...taken, merchantId: 'm_list_bound_b' },
        { point: taken.point, olderThan: taken.olderThan },
        { ...taken, olderThan: 60_000 },
        { merchantId, point: taken.point },
        { ...taken, operation: 'charge' },
      ] as const;
      for (const filters of others) {
        for (const listing of [engine, unreachable]) {
          const issues = await refusal(listing, { ...filters, limit: 2, cursor });
          expect(issues.map((issue) => issue.field)).toEqual(['cursor']);
          expect(issues[0]!.message).toContain('belongs to a listing with other filters');
        }
      }
      const pointAndMerchant = await refusal(engine, {
        merchantId: 'm_list_bound_b',
        point: 'reserved',
        olderThan: taken.olderThan,
        limit: 2,
        cursor,
      });
      expect(pointAndMerchant[0]!.message).toContain('(point, merchantId)');
      // A bad filter is named as such, not as a cursor of other filters.
      expect(
        (await refusal(engine, { ...taken, olderThan: -1, limit: 2, cursor })).map((i) => i.field),
      ).toEqual(['olderThan']);
    } finally {
      await unreachable.close();
    }
  });

  it('pages on under the same filters, whatever the limit, without repeating or skipping keys', async () => {
    const merchantId = 'm_list_same';
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 7, aRequest({ merchantId }));
    await seedAbandonedKeys(db.pool, db.tables, 2, aRequest({ merchantId }), 'payout');
    // Three at the very same instant: ties are broken by key, across page boundaries too.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = '2020-01-01T00:00:00.123456Z'::timestamptz
      WHERE merchant_id = ${merchantId}
        AND key = ANY(${sql.array(
          seeds.slice(0, 3).map((s) => s.key),
          'text',
        )})`);
    await park(
      merchantId,
      seeds.slice(1, 6).map((s) => s.key),
      'stuck',
    );
    // Every filter set, each carried by the cursor.
    const filters = {
      merchantId,
      operation: 'charge',
      point: 'failed',
      olderThan: 0,
    } as const;

    const whole = await engine.list({ ...filters, limit: 100 });
    const keys: string[] = [];
    let cursor: string | null = null;
    for (const limit of [2, 1, 3, 2]) {
      const page = await engine.list({ ...filters, limit, cursor });
      keys.push(...page.keys.map((k) => k.key));
      cursor = page.nextCursor;
      if (cursor === null) break;
    }

    expect(whole.keys.map((k) => k.key).sort()).toEqual(
      seeds
        .slice(1, 6)
        .map((s) => s.key)
        .sort(),
    );
    expect(keys).toEqual(whole.keys.map((k) => k.key));
    expect(cursor).toBe(null);
  });

  it('refuses a tampered cursor, and a cursor of the first form, which names no filters', async () => {
    const merchantId = 'm_list_tamper';
    await seedAbandonedKeys(db.pool, db.tables, 3, aRequest({ merchantId }));
    const { nextCursor } = await engine.list({ merchantId, limit: 1 });
    const cursor = nextCursor!;
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const recoded = (changed: unknown) =>
      Buffer.from(JSON.stringify(changed)).toString('base64url');
    const at = (index: number, value: unknown) =>
      recoded(values.map((v, i) => (i === index ? value : v)));
    const fieldsOf = async (tampered: string) =>
      (await refusal(engine, { merchantId, limit: 1, cursor: tampered })).map((i) => i.field);
    // The first form: the position alone, as cursors were before they carried their filters.
    const firstForm = recoded(values.slice(1, 5));

    expect(values[2]).toBe(merchantId);
    expect(await engine.list({ merchantId, limit: 1, cursor })).toMatchObject({
      keys: [{ merchantId }],
    });
    for (const tampered of [
      `${cursor.slice(0, -2)}!!`,
      cursor.slice(0, 10),
      at(0, 3),
      at(1, 'yesterday'),
      at(5, 'lost'),
      at(6, -5),
      at(7, 4),
      recoded([...values, 'more']),
      recoded({ after: values }),
      '',
    ]) {
      expect(await fieldsOf(tampered)).toEqual(['cursor']);
    }
    // Scope says no merchant filter: refused under one, since it differs.
    expect(
      (await refusal(engine, { merchantId, limit: 1, cursor: at(7, 0) }))[0]!.message,
    ).toContain('other filters (merchantId)');
    const old = await refusal(engine, { merchantId, limit: 1, cursor: firstForm });
    expect(old.map((i) => i.field)).toEqual(['cursor']);
    expect(old[0]!.message).toContain('start the listing again without a cursor');
  });

  it('parked keys are listed through their own index, not by reading the table', async () => {
    // The test table is tiny: a scan would win on cost. Without it, the index must serve both
    // the filter and the order (no sort over every parked key).
    const plan = await db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SET LOCAL enable_seqscan = off`);
      return tx.anyFirst(sql.type(z.object({ 'QUERY PLAN': z.string() }))`
        EXPLAIN SELECT merchant_id, operation, key FROM ${db.tables.keys} k
        WHERE k.recovery_point = 'failed'
          AND (k.created_at, k.merchant_id, k.operation, k.key)
            > ('2020-01-01'::timestamp AT TIME ZONE 'UTC', 'm', 'charge', 'k')
        ORDER BY k.created_at, k.merchant_id, k.operation, k.key
        LIMIT 51`);
    });

    expect(plan.join('\n')).toContain('idempotency_keys_failed_idx');
    expect(plan.join('\n')).not.toContain('Sort');
  });
});
