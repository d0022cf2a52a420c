import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  type ChargeEngineOptions,
  type ChargeOutcome,
  type PgPoolLike,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import {
  createTestDatabase,
  withSessionSetting,
  type TestDatabase,
} from '../support/testDatabase.js';
import { aKey, aRequest, answerOf, readKey, settlesSoon, waitFor } from '../support/charges.js';
import { aKeyHolder } from '../support/keyHolder.js';
import { gatedProvider } from '../support/gatedProvider.js';

// A key another transaction holds (its claim uncommitted inside a `reserve` hook, or its row
// locked by a completion inside a `complete` hook) is an attempt in progress: a retry of it,
// from another process, is answered 409 while it is held, not kept waiting (and holding one of
// its pool's connections) for as long as that transaction lasts.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** A holder on this file's database (see `aKeyHolder`). */
const aHolder = (hook: 'reserve' | 'complete', options: Partial<ChargeEngineOptions> = {}) =>
  aKeyHolder(db.pgPool, hook, options);

/**
 * While the holder holds the key, `call` is answered 409 (not kept waiting); once the holder is
 * released, `call` replays the holder's outcome.
 */
async function answered409WhileHeld(
  holder: { release(): void },
  held: Promise<ChargeOutcome>,
  call: () => Promise<ChargeOutcome>,
) {
  try {
    const answer = answerOf(call());
    expect(await settlesSoon(answer)).toBe(true);
    expect(await answer).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(await answer).toMatchObject({ httpStatus: 409 });
  } finally {
    holder.release();
  }
  const outcome = await held;
  expect(await call()).toMatchObject({ chargeId: outcome.chargeId, replayed: true });
}

describe('a retry of a key another process holds uncommitted', () => {
  it('is answered 409 while it is held, then replays its outcome', async () => {
    const merchantId = 'm_held_alone';
    const key = aKey();
    const holder = aHolder('reserve');
    const held = holder.engine.processCharge(key, aRequest({ merchantId }));
    await holder.holding(1);
    const provider = createFakeProvider();
    const retrier = createChargeEngine({ pool: db.pgPool, provider, groupCommit: false });
    await answered409WhileHeld(holder, held, () =>
      retrier.processCharge(key, aRequest({ merchantId })),
    );
    expect(provider.ledger()).toHaveLength(0);
  });

  it('does not take a small pool from the charges of other keys', async () => {
    const merchantId = 'm_held_pool';
    const keys = [aKey(), aKey()];
    const holder = aHolder('reserve');
    const held = keys.map((key) => holder.engine.processCharge(key, aRequest({ merchantId })));
    await holder.holding(2);
    const pool: PgPoolLike = await createEnginePool(db.url, { maximumPoolSize: 2 });
    try {
      const retrier = createChargeEngine({ pool, provider: createFakeProvider() });
      // As many retries of held keys as the pool has connections, then a charge of a new key.
      const retries = keys.map((key) =>
        answerOf(retrier.processCharge(key, aRequest({ merchantId }))),
      );
      const fresh = retrier.processCharge(aKey(), aRequest({ merchantId }));
      expect(await settlesSoon(Promise.all([...retries, fresh]))).toBe(true);
      for (const retry of retries) expect(await retry).toBeInstanceOf(IdempotencyKeyInUseError);
      expect(await fresh).toMatchObject({ status: 'succeeded', replayed: false });
    } finally {
      holder.release();
      await Promise.all(held);
      await pool.end();
    }
  });

  it("is answered 409 by an engine with a reserve hook, whose SQL keeps the session's lock timeout", async () => {
    const merchantId = 'm_held_hooked';
    const key = aKey();
    const holder = aHolder('reserve');
    const held = holder.engine.processCharge(key, aRequest({ merchantId }));
    await holder.holding(1);
    const pool: PgPoolLike = await createEnginePool(
      withSessionSetting(db.url, 'lock_timeout', '20s'),
    );
    const seen: unknown[] = [];
    const retrier = createChargeEngine({
      pool,
      provider: createFakeProvider(),
      hooks: {
        reserve: async (tx) => {
          const { rows } = await tx.query("SELECT current_setting('lock_timeout') AS t");
          seen.push(rows[0]?.t);
        },
      },
    });
    try {
      const answer = answerOf(retrier.processCharge(key, aRequest({ merchantId })));
      expect(await settlesSoon(answer)).toBe(true);
      expect(await answer).toBeInstanceOf(IdempotencyKeyInUseError);
      // A key of its own: its hook runs after the claim, with the session's setting, not the
      // claim's shorter one.
      await retrier.processCharge(aKey(), aRequest({ merchantId }));
      expect(seen).toEqual(['20s']);
    } finally {
      holder.release();
      await held;
      await pool.end();
    }
  });
});

describe('a caller that waits on a key another process holds uncommitted', () => {
  it('tries again with back-off until its wait runs out, then is answered 409', async () => {
    const merchantId = 'm_held_backoff';
    const key = aKey();
    const holder = aHolder('reserve');
    const held = holder.engine.processCharge(key, aRequest({ merchantId }));
    await holder.holding(1);
    let tries = 0;
    const waiter = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      inProgress: { waitMs: 2_000 },
      onEvent: (event) => {
        if (event.type === 'waiting') tries += 1;
      },
    });
    try {
      const answer = await answerOf(waiter.processCharge(key, aRequest({ merchantId })));
      expect(answer).toBeInstanceOf(IdempotencyKeyInUseError);
      // Each try waits 100 ms on the key's lock; back to back they were about 17 in 2 s. The
      // pauses between them (100 ms, doubling to 400 ms) leave about 6, fewer on a slow machine.
      expect(tries).toBeGreaterThanOrEqual(2);
      expect(tries).toBeLessThanOrEqual(8);
    } finally {
      holder.release();
    }
    const outcome = await held;
    expect(await waiter.processCharge(key, aRequest({ merchantId }))).toMatchObject({
      chargeId: outcome.chargeId,
      replayed: true,
    });
  });
});

describe('a key whose completion holds its row in a complete hook', () => {
  it('is answered 409 to a caller that waits on keys in progress, within its wait', async () => {
    const merchantId = 'm_held_waiter';
    const key = aKey();
    const holder = aHolder('complete');
    const held = holder.engine.processCharge(key, aRequest({ merchantId }));
    await holder.holding(1);
    const waiter = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      inProgress: { waitMs: 300 },
    });
    await answered409WhileHeld(holder, held, () =>
      waiter.processCharge(key, aRequest({ merchantId })),
    );
  });

  it('is waited on, not refused, by a caller whose wait is longer than PostgreSQL takes as a lock timeout', async () => {
    const merchantId = 'm_held_long_wait';
    const key = aKey();
    const gated = gatedProvider();
    const holder = createChargeEngine({ pool: db.pgPool, provider: gated.provider });
    const held = holder.processCharge(key, aRequest({ merchantId }));
    // Claimed and committed: the holder now waits on its provider call.
    await waitFor(async () => (await readKey(db.pool, db.tables, merchantId, key)) !== null);
    let waiting = false;
    const waiter = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      // Weeks: past the longest lock_timeout PostgreSQL accepts (about 24.8 days).
      inProgress: { waitMs: 2 ** 33 },
      onEvent: (event) => {
        if (event.type === 'waiting') waiting = true;
      },
    });
    const waited = answerOf(waiter.processCharge(key, aRequest({ merchantId })));
    await waitFor(() => Promise.resolve(waiting));
    gated.open();
    const outcome = await held;
    expect(await waited).toMatchObject({ chargeId: outcome.chargeId, replayed: true });
  });

  it('is answered 409 to a retry that would take it over once its lease ran out', async () => {
    const merchantId = 'm_held_takeover';
    const key = aKey();
    const holder = aHolder('complete', { leaseMs: 1_000, providerTimeoutMs: 500 });
    const held = holder.engine.processCharge(key, aRequest({ merchantId }));
    await holder.holding(1);
    const provider = createFakeProvider();
    const retrier = createChargeEngine({ pool: db.pgPool, provider });
    // The lease ran out while the completion, fenced and written, waits in its hook.
    await waitFor(async () => {
      const leaseOver: unknown = await db.pool.oneFirst(sql.unsafe`
        SELECT locked_until <= now() FROM ${db.tables.keys}
        WHERE merchant_id = ${merchantId} AND key = ${key}`);
      return leaseOver === true;
    }).catch((error: unknown) => {
      holder.release();
      throw error;
    });
    await answered409WhileHeld(holder, held, () =>
      retrier.processCharge(key, aRequest({ merchantId })),
    );
    expect(provider.ledger()).toHaveLength(0);
  });
});
