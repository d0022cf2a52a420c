import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createEnginePool,
  IdempotencyKeyInUseError,
  StoreUnavailableError,
  type PgPoolLike,
  type RefundRequest,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { movementStatements } from '../../src/store/movementStatements.js';
import {
  aKey,
  answerOf,
  aSucceededCharge,
  settlesSoon,
  waitFor,
  waitingOnLocks,
} from '../support/charges.js';
import { aKeyHolder } from '../support/keyHolder.js';
import {
  createTestDatabase,
  withSessionSetting,
  type TestDatabase,
} from '../support/testDatabase.js';

// A refund's key another transaction holds uncommitted (its claim inside a `reserve` hook) is an
// attempt in progress, answered 409 as a charge's is, not waited on for as long as that
// transaction lasts. The charge's row is another matter: refunds of one charge take their turns
// on it, and a refund of another key waits for the one before it to commit, for a second at
// most.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const merchantId = 'm_refund_held';
/** One provider for every engine here: it knows the charges it made. */
const provider = createFakeProvider();

/** A succeeded charge of 1,000 to refund. */
const aCharge = () => aSucceededCharge(db.pgPool, provider, merchantId);

/** Another process's engine whose refunds wait in their \`reserve\` hook until \`release\`. */
const aRefundHolder = () => aKeyHolder(db.pgPool, 'refund.reserve', { provider });

describe('a retry of a refund key another process holds uncommitted', () => {
  it('is answered 409 while it is held, then replays its outcome', async () => {
    const refund: RefundRequest = { merchantId, chargeId: await aCharge(), amountMinor: 400 };
    const key = aKey();
    const holder = aRefundHolder();
    const held = holder.engine.processRefund(key, refund);
    await holder.holding(1);
    const retrier = createChargeEngine({ pool: db.pgPool, provider });
    try {
      const answer = answerOf(retrier.processRefund(key, refund));
      expect(await settlesSoon(answer)).toBe(true);
      expect(await answer).toBeInstanceOf(IdempotencyKeyInUseError);
      expect(await answer).toMatchObject({ httpStatus: 409 });
    } finally {
      holder.release();
    }
    const outcome = await held;
    expect(outcome).toMatchObject({ status: 'succeeded' });
    expect(await retrier.processRefund(key, refund)).toMatchObject({
      refundId: outcome.refundId,
      replayed: true,
    });
  });

  it("leaves the session's lock timeout to the retrier's own reserve hook", async () => {
    const chargeId = await aCharge();
    const key = aKey();
    const holder = aRefundHolder();
    const held = holder.engine.processRefund(key, { merchantId, chargeId, amountMinor: 400 });
    await holder.holding(1);
    const pool: PgPoolLike = await createEnginePool(
      withSessionSetting(db.url, 'lock_timeout', '20s'),
    );
    const seen: unknown[] = [];
    const retrier = createChargeEngine({
      pool,
      provider,
      hooks: {
        refund: {
          reserve: async (tx) => {
            const { rows } = await tx.query("SELECT current_setting('lock_timeout') AS t");
            seen.push(rows[0]?.t);
          },
        },
      },
    });
    try {
      const answer = answerOf(
        retrier.processRefund(key, { merchantId, chargeId, amountMinor: 400 }),
      );
      expect(await settlesSoon(answer)).toBe(true);
      expect(await answer).toBeInstanceOf(IdempotencyKeyInUseError);
      // A refund of another charge: its hook runs after the claim, with the session's setting.
      const other = { merchantId, chargeId: await aCharge(), amountMinor: 100 };
      expect(await retrier.processRefund(aKey(), other)).toMatchObject({ status: 'succeeded' });
      expect(seen).toEqual(['20s']);
    } finally {
      holder.release();
      await held;
      await pool.end();
    }
  });
});

describe("a refund of another key of a charge whose row a refund's transaction holds", () => {
  it('waits for that transaction, then is judged on what it left', async () => {
    const chargeId = await aCharge();
    const holder = aRefundHolder();
    const held = holder.engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 700 });
    await holder.holding(1);
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const next = engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 400 });
    let settled = false;
    void next.then(
      () => (settled = true),
      () => (settled = true),
    );
    try {
      // Waiting on the charge's row, past the 100 ms a key's wait is cut at.
      await waitFor(async () => (await waitingOnLocks(db.pool)) >= 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false);
      expect(await waitingOnLocks(db.pool)).toBeGreaterThanOrEqual(1);
    } finally {
      holder.release();
    }
    expect(await held).toMatchObject({ status: 'succeeded' });
    // 700 of 1,000 held first: 400 more is refused.
    expect(await next).toMatchObject({ status: 'refused' });
    expect(JSON.parse((await next).body)).toMatchObject({ refusal: 'exceeds_refundable' });
  });
});

describe("a refund of another key of a charge whose row a refund's hook holds for long", () => {
  it('is answered 503 once it waited a second, with nothing written, and goes through later', async () => {
    const chargeId = await aCharge();
    const holder = aRefundHolder();
    const held = holder.engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 300 });
    await holder.holding(1);
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const refund = { merchantId, chargeId, amountMinor: 400 };
    try {
      const answer = await answerOf(engine.processRefund(key, refund));
      expect(answer).toBeInstanceOf(StoreUnavailableError);
      expect(answer).toMatchObject({ httpStatus: 503 });
      // Rolled back whole: no key, so the same request is a fresh claim later.
      expect(await engine.inspect({ merchantId, key, operation: 'refund' })).toBeNull();
    } finally {
      holder.release();
    }
    expect(await held).toMatchObject({ status: 'succeeded' });
    expect(await engine.processRefund(key, refund)).toMatchObject({
      status: 'succeeded',
      replayed: false,
    });
  });
});

describe("a refund's claim that loses its key's race inside a transaction", () => {
  it("puts the session's lock timeout back for the rest of the transaction", async () => {
    const chargeId = await aCharge();
    const claim = movementStatements(db.tables).claim.text;
    const key = aKey();
    // Parameters as \`claimMovement\` sends them; a new movement id and lock token each time.
    const values = () => [
      merchantId,
      'refund',
      key,
      'h',
      '{}',
      randomUUID(),
      randomUUID(),
      60_000,
      'refund',
      chargeId,
      100,
      null,
      `pk-${randomUUID()}`,
      'charge',
    ];
    const holder = new pg.Client({ connectionString: db.url });
    const loser = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await loser.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(claim, values());
      await loser.query('BEGIN');
      const before: unknown = (await loser.query('SHOW lock_timeout')).rows[0];
      const lost = loser.query(claim, values());
      // The loser's insert waits on the holder's uncommitted key, then meets it committed.
      await waitFor(async () => (await waitingOnLocks(db.pool)) >= 1);
      await holder.query('COMMIT');
      expect((await lost).rows[0]).toMatchObject({ claimed: false });
      expect((await loser.query('SHOW lock_timeout')).rows[0]).toEqual(before);
      await loser.query('ROLLBACK');
    } finally {
      await holder.end();
      await loser.end();
    }
  });
});
