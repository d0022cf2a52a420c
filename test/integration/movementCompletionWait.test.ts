import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import {
  createChargeEngine,
  createEnginePool,
  StoreUnavailableError,
  type PaymentProvider,
  type PgPoolLike,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import {
  aGate,
  aKey,
  answerOf,
  aRequest,
  aSucceededCharge,
  waitFor,
  waitingOnLocks,
} from '../support/charges.js';
import { aKeyHolder } from '../support/keyHolder.js';
import {
  createTestDatabase,
  withSessionSetting,
  type TestDatabase,
} from '../support/testDatabase.js';

// A refund's completion writes its charge's row, where refunds of one charge take their turns: it
// waits behind a sibling whose `complete` hook holds that row, for a second at most. Past that it
// is answered 503 with nothing written, the key still `reserved` and its lease given back, and a
// retry adopts the refund the provider made. A capture's completion is bound the same way.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const merchantId = 'm_refund_completion_wait';
/** One provider for every engine here: it knows the charges it made. */
const fake = createFakeProvider();

/** A succeeded charge of 1,000 to refund. */
const aCharge = () => aSucceededCharge(db.pgPool, fake, merchantId);

/** The shared fake, its refunds waiting on a gate: the claim commits, the completion waits. */
function gatedRefunds() {
  const gate = aGate();
  let asked = 0;
  const provider: PaymentProvider = {
    createCharge: (input, opts) => fake.createCharge(input, opts),
    findCharge: (key, opts) => fake.findCharge(key, opts),
    createRefund: async (input, opts) => {
      asked += 1;
      await gate.wait();
      return fake.createRefund(input, opts);
    },
    findRefund: (key, opts) => fake.findRefund(key, opts),
  };
  return { provider, open: gate.open, asked: () => asked };
}

/**
 * A refund of 400 reserved on `chargeId` and answered by the provider once another refund of 300,
 * of the same charge, holds the charge's row in its `complete` hook: the completion waits there.
 */
async function aRefundBehindAHeldSibling(
  chargeId: string,
  { pool = db.pgPool, withHook = true }: { pool?: PgPoolLike; withHook?: boolean } = {},
) {
  const gated = gatedRefunds();
  const hooked = aLockTimeoutProbe();
  const events: string[] = [];
  const engine = createChargeEngine({
    pool,
    provider: gated.provider,
    sweepGraceMs: 0,
    onEvent: (event) => events.push(event.type),
    ...(withHook ? { hooks: { refund: { complete: hooked.complete } } } : {}),
  });
  const key = aKey();
  const request = { merchantId, chargeId, amountMinor: 400 };
  const waiting = answerOf(engine.processRefund(key, request));
  await waitFor(() => Promise.resolve(gated.asked() >= 1));
  const holder = aKeyHolder(db.pgPool, 'refund.complete', { provider: fake });
  const sibling = holder.engine.processRefund(aKey(), { merchantId, chargeId, amountMinor: 300 });
  await holder.holding(1);
  gated.open();
  const seenLockTimeouts = hooked.seen;
  return { engine, key, request, waiting, holder, sibling, seenLockTimeouts, gated, events };
}

/** A `complete` hook that notes the `lock_timeout` its transaction runs with. */
function aLockTimeoutProbe() {
  const seen: unknown[] = [];
  const complete = async (tx: { query: (text: string) => Promise<{ rows: unknown[] }> }) => {
    const { rows } = await tx.query("SELECT current_setting('lock_timeout') AS t");
    seen.push((rows[0] as { t?: unknown } | undefined)?.t);
  };
  return { seen, complete };
}

describe("a refund's completion behind a sibling's complete hook that holds the charge's row", () => {
  it('waits for a sibling that commits within a second, then completes', async () => {
    const chargeId = await aCharge();
    const behind = await aRefundBehindAHeldSibling(chargeId);
    try {
      await waitFor(async () => (await waitingOnLocks(db.pool)) >= 1);
    } finally {
      behind.holder.release();
    }
    expect(await behind.sibling).toMatchObject({ status: 'succeeded' });
    expect(await behind.waiting).toMatchObject({ status: 'succeeded', replayed: false });
    const seen = await behind.engine.inspect({ merchantId, key: behind.key, operation: 'refund' });
    expect(seen?.movement?.chargeTotals).toMatchObject({
      refundedMinor: 700,
      refundReservedMinor: 0,
    });
    // Its own hook ran after the wait, with the session's lock timeout (none) put back.
    expect(behind.seenLockTimeouts).toEqual(['0']);
  });

  it.each([true, false])(
    'is answered 503 after a second, keeps the key reserved, and a retry adopts the refund (complete hook: %s)',
    async (withHook) => {
      const chargeId = await aCharge();
      const behind = await aRefundBehindAHeldSibling(chargeId, { withHook });
      try {
        const answer = await behind.waiting;
        expect(answer).toBeInstanceOf(StoreUnavailableError);
        expect(answer).toMatchObject({ httpStatus: 503 });
        const seen = await behind.engine.inspect({
          merchantId,
          key: behind.key,
          operation: 'refund',
        });
        // Nothing of the completion written; the lease given back for the retry to take at once.
        expect(seen).toMatchObject({ recoveryPoint: 'reserved', lease: { held: false } });
        expect(seen?.movement).toMatchObject({ status: 'reserved', providerMovementId: null });
        expect(seen?.lastError).toMatch(/lock timeout/);
        expect(behind.seenLockTimeouts).toEqual([]);
      } finally {
        behind.holder.release();
      }
      expect(await behind.sibling).toMatchObject({ status: 'succeeded' });
      const retried = await behind.engine.processRefund(behind.key, behind.request);
      expect(retried).toMatchObject({ status: 'succeeded', replayed: false });
      // Found under its key and adopted: the provider was asked to refund once.
      expect(behind.gated.asked()).toBe(1);
      expect(behind.events).toContain('adopted');
      const providerKey = (await behind.engine.inspect({
        merchantId,
        key: behind.key,
        operation: 'refund',
      }))!.movement!.providerKey;
      // Adopted, not refunded again; both refunds on the charge's books.
      expect(fake.refundsFor(providerKey)).toBe(1);
      const seen = await behind.engine.inspect({
        merchantId,
        key: behind.key,
        operation: 'refund',
      });
      expect(seen?.movement?.chargeTotals).toMatchObject({
        refundedMinor: 700,
        refundReservedMinor: 0,
      });
    },
  );
});

describe("a refund's completion cut short at its charge's row, left to the sweeper", () => {
  it('is adopted by the next sweep, and the retry replays it', async () => {
    const chargeId = await aCharge();
    const behind = await aRefundBehindAHeldSibling(chargeId);
    try {
      expect(await behind.waiting).toBeInstanceOf(StoreUnavailableError);
    } finally {
      behind.holder.release();
    }
    await behind.sibling;
    expect(await behind.engine.sweep()).toMatchObject({ adopted: 1, cancelled: 0 });
    expect(behind.gated.asked()).toBe(1);
    const replayed = await behind.engine.processRefund(behind.key, behind.request);
    expect(replayed).toMatchObject({ status: 'succeeded', replayed: true });
    const seen = await behind.engine.inspect({ merchantId, key: behind.key, operation: 'refund' });
    expect(seen?.movement?.chargeTotals).toMatchObject({
      refundedMinor: 700,
      refundReservedMinor: 0,
    });
  });
});

describe("a refund's completion in its complete hook's transaction", () => {
  it("puts the session's own lock timeout back for the hook", async () => {
    const chargeId = await aCharge();
    const pool = await createEnginePool(withSessionSetting(db.url, 'lock_timeout', '20s'));
    const probe = aLockTimeoutProbe();
    const engine = createChargeEngine({
      pool,
      provider: fake,
      hooks: { refund: { complete: probe.complete } },
    });
    try {
      const refund = { merchantId, chargeId, amountMinor: 400 };
      expect(await engine.processRefund(aKey(), refund)).toMatchObject({ status: 'succeeded' });
      expect(probe.seen).toEqual(['20s']);
    } finally {
      await pool.end();
    }
  });
});

describe("a capture's completion behind a transaction that holds the charge's row", () => {
  // No sibling movement holds an authorization's row for long (a second capture, or a refund of
  // an uncaptured charge, is refused before any hook runs): the caller's own SQL can, and the
  // completion's bound is the one statement a refund's is.
  it('is answered 503 after a second, the key reserved, and a retry adopts the capture', async () => {
    const capturing = aGate();
    let asked = 0;
    const provider: PaymentProvider = {
      ...fake,
      capture: async (input, opts) => {
        asked += 1;
        await capturing.wait();
        return fake.capture(input, opts);
      },
    };
    const engine = createChargeEngine({ pool: db.pgPool, provider, sweepGraceMs: 0 });
    const auth = await engine.processCharge(
      aKey(),
      aRequest({ merchantId, amountMinor: 1000, capture: false }),
    );
    const key = aKey();
    const request = { merchantId, chargeId: auth.chargeId, amountMinor: 600 };
    const waiting = answerOf(engine.processCapture(key, request));
    await waitFor(() => Promise.resolve(asked >= 1));
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM chargeonce.charges WHERE id = $1 FOR UPDATE`, [
        auth.chargeId,
      ]);
      capturing.open();
      const answer = await waiting;
      expect(answer).toBeInstanceOf(StoreUnavailableError);
      const seen = await engine.inspect({ merchantId, key, operation: 'capture' });
      expect(seen).toMatchObject({ recoveryPoint: 'reserved', lease: { held: false } });
      expect(seen?.movement).toMatchObject({ status: 'reserved', providerMovementId: null });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const retried = await engine.processCapture(key, request);
    expect(retried).toMatchObject({ status: 'succeeded', replayed: false });
    // Found under its key and adopted: asked once, captured once.
    expect(asked).toBe(1);
    const providerKey = (await engine.inspect({ merchantId, key, operation: 'capture' }))!.movement!
      .providerKey;
    expect(fake.capturesFor(providerKey)).toBe(1);
    const seen = await engine.inspect({ merchantId, key, operation: 'capture' });
    expect(seen?.movement?.chargeTotals).toMatchObject({
      capturedMinor: 600,
      captureReservedMinor: null,
    });
  });
});
