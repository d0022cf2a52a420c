import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  type ChargeOutcome,
  type PgPoolLike,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { batchStatements } from '../../src/store/batchStatements.js';
import { KEY_LOCK_WAIT_MS } from '../../src/store/keyLockWait.js';
import { claimValues } from '../../src/store/claimKey.js';
import {
  createTestDatabase,
  withSessionSetting,
  type TestDatabase,
} from '../support/testDatabase.js';
import { aKey, aRequest, settlesSoon, waitingOnLocks } from '../support/charges.js';
import { aKeyHolder } from '../support/keyHolder.js';

// Group commit must not tie unrelated keys to one key's wait: a key another process holds
// uncommitted (its claim inside a `reserve` hook) waits alone, for a while, and its call alone
// is answered 409, as a key in progress is.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/**
 * Another process's engine whose `reserve` hook holds its claim of a key uncommitted until the
 * gate opens: the key's row is inserted but not committed, so a claim of it anywhere waits.
 */
async function holdKeyUncommitted(merchantId: string, key: string) {
  const holder = aKeyHolder(db.pgPool, 'reserve');
  const held = holder.engine.processCharge(key, aRequest({ merchantId }));
  await holder.holding(1);
  return { held, release: holder.release };
}

/**
 * One call alone (the load is light), then the held key among `others` fresh keys: they go out
 * together, in one batch claim.
 */
function aBatchWith(
  engine: ReturnType<typeof createChargeEngine>,
  merchantId: string,
  heldKey: string,
  others: number,
) {
  const first = engine.processCharge(aKey(), aRequest({ merchantId }));
  const onHeld = engine.processCharge(heldKey, aRequest({ merchantId }));
  const rest = Array.from({ length: others }, () =>
    engine.processCharge(aKey(), aRequest({ merchantId })),
  );
  return { onHeld, unrelated: Promise.all([first, ...rest]) };
}

const allSucceeded = (outcomes: ChargeOutcome[]) =>
  outcomes.every((o) => o.status === 'succeeded' && !o.replayed);

describe('group commit beside a key held by another transaction', () => {
  it("the batch's unrelated keys are charged, and the held key answered 409, while it is held", async () => {
    const merchantId = 'm_batch_lock_wait';
    const heldKey = aKey();
    const { held, release } = await holdKeyUncommitted(merchantId, heldKey);
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_warm' }));

    const { onHeld, unrelated } = aBatchWith(engine, merchantId, heldKey, 10);
    const heldAnswer = onHeld.catch((e: unknown) => e);
    try {
      // With the gate still shut: before, the whole batch waited for the hook.
      expect(await settlesSoon(unrelated)).toBe(true);
      expect(allSucceeded(await unrelated)).toBe(true);
      // The held key's claim, sent again alone, waited on the key for a while, then gave up: the
      // key is another attempt's, in progress.
      expect(await settlesSoon(heldAnswer)).toBe(true);
      expect(await heldAnswer).toBeInstanceOf(IdempotencyKeyInUseError);
      expect(await waitingOnLocks(db.pool)).toBe(0);
      // Nor do the calls made after the batch was split wait: a batch of them, then one alone.
      const later = Promise.all(
        Array.from({ length: 5 }, () => engine.processCharge(aKey(), aRequest({ merchantId }))),
      );
      expect(await settlesSoon(later)).toBe(true);
      const lone = engine.processCharge(aKey(), aRequest({ merchantId }));
      expect(await settlesSoon(lone)).toBe(true);
      expect(allSucceeded([...(await later), await lone])).toBe(true);
    } finally {
      release();
    }
    const holderOutcome = await held;
    expect(holderOutcome.status).toBe('succeeded');
    // Asked again once the other process committed: its outcome, never a charge of this one's.
    const again = await engine.processCharge(heldKey, aRequest({ merchantId }));
    expect(again).toMatchObject({ chargeId: holderOutcome.chargeId, replayed: true });
    // The warm-up and the 17 other keys: nothing for the held key at this engine's provider.
    expect(provider.ledger()).toHaveLength(18);
  });

  it("the held key's claim sent alone answers 409 and holds up none of the calls after it", async () => {
    const merchantId = 'm_lone_lock_wait';
    const heldKey = aKey();
    const { held, release } = await holdKeyUncommitted(merchantId, heldKey);
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_warm' }));

    // The engine's only call: it goes out alone, on the batchers' one writing slot.
    const onHeld = engine.processCharge(heldKey, aRequest({ merchantId })).catch((e: unknown) => e);
    try {
      const later = Promise.all(
        Array.from({ length: 6 }, () => engine.processCharge(aKey(), aRequest({ merchantId }))),
      );
      expect(await settlesSoon(later)).toBe(true);
      expect(allSucceeded(await later)).toBe(true);
      expect(await settlesSoon(onHeld)).toBe(true);
      expect(await onHeld).toBeInstanceOf(IdempotencyKeyInUseError);
    } finally {
      release();
    }
    await held;
  });

  it("the session's shorter lock timeout is kept, and its wait answered 409 too", async () => {
    const merchantId = 'm_batch_lock_timeout';
    const heldKey = aKey();
    const { held, release } = await holdKeyUncommitted(merchantId, heldKey);
    const pool: PgPoolLike = await createEnginePool(
      withSessionSetting(db.url, 'lock_timeout', '30'),
      {
        maximumPoolSize: 10,
      },
    );
    try {
      const engine = createChargeEngine({ pool, provider: createFakeProvider() });
      await engine.processCharge(aKey(), aRequest({ merchantId: 'm_warm' }));

      const { onHeld, unrelated } = aBatchWith(engine, merchantId, heldKey, 10);
      const [others, own] = await Promise.allSettled([unrelated, onHeld]);

      expect(others.status).toBe('fulfilled');
      expect(allSucceeded((others as PromiseFulfilledResult<ChargeOutcome[]>).value)).toBe(true);
      expect(own.status).toBe('rejected');
      expect((own as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyKeyInUseError);
    } finally {
      release();
      await held;
      await pool.end();
    }
  });
});

describe("a batch claim's lock timeout", () => {
  /** A batch claim of one new key (a fresh charge's first statement), on `client`. */
  const claimOne = (client: pg.Client) => {
    const values = claimValues({
      merchantId: 'm_lock_timeout',
      operation: 'charge',
      key: aKey(),
      reserve: true,
      requestHash: 'h',
      canonicalRequest: '{}',
      chargeId: randomUUID(),
      lockToken: randomUUID(),
      leaseMs: 30_000,
      customerId: 'c_1',
      amountMinor: 100,
      currency: 'NGN',
      description: null,
      metadata: null,
      providerKey: randomUUID(),
      authorizedOnly: false,
    });
    return client.query({
      text: batchStatements(db.tables).claim.text,
      values: values.map((value) => [value]),
    });
  };
  const lockTimeout = async (client: pg.Client) =>
    (await client.query<{ lock_timeout: string }>('SHOW lock_timeout')).rows[0]?.lock_timeout;

  it('holds for its own transaction only, and keeps a shorter one of the session', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      await claimOne(client);
      expect(await lockTimeout(client)).toBe(`${KEY_LOCK_WAIT_MS}ms`);
      await client.query('COMMIT');
      expect(await lockTimeout(client)).toBe('0');

      // Alone, as the batcher sends it: its implicit transaction ends with it.
      await claimOne(client);
      expect(await lockTimeout(client)).toBe('0');

      await client.query("SET lock_timeout = '20ms'");
      await client.query('BEGIN');
      await claimOne(client);
      expect(await lockTimeout(client)).toBe('20ms');
      await client.query('ROLLBACK');
      await client.query("SET lock_timeout = '5s'");
      await client.query('BEGIN');
      await claimOne(client);
      expect(await lockTimeout(client)).toBe(`${KEY_LOCK_WAIT_MS}ms`);
      await client.query('ROLLBACK');
      expect(await lockTimeout(client)).toBe('5s');
    } finally {
      await client.end();
    }
  });
});
