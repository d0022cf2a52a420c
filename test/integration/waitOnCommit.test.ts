import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createChargeEngine, type ChargeOnceEvent, type PaymentProvider } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { gatedProvider } from '../support/gatedProvider.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, waitFor } from '../support/charges.js';
import { WAITERS_CHANNEL, waiterPayload } from '../../src/store/hotStatements.js';
import { createKeyWaiters } from '../../src/store/keyWaiters.js';

// `inProgress: { waitMs }` on a node-postgres pool: a caller that meets a key in progress marks
// it and sleeps until the winner's completion wakes it (LISTEN/NOTIFY), instead of polling.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const hasWaiters = (key: string) =>
  db.pool.oneFirst(
    sql.type(z.object({ has_waiters: z.boolean() }))`
      SELECT has_waiters FROM chargeonce.idempotency_keys WHERE key = ${key}`,
  );

describe('the listener', () => {
  it('wakes the waiters of a key when a NOTIFY names it, and only them', async () => {
    const waiters = createKeyWaiters(db.pgPool);
    expect(await waiters.listen()).toBe(true);
    const scoped = { merchantId: 'm_1', operation: 'charge', key: aKey() };
    const other = { ...scoped, key: aKey() };
    const woken = waiters.wait(waiterPayload('chargeonce', scoped), 60_000).woken;
    const notWoken = waiters.wait(waiterPayload('chargeonce', other), 300).woken;

    await db.pool.query(
      sql.unsafe`SELECT pg_notify(${WAITERS_CHANNEL}, ${waiterPayload('chargeonce', scoped)})`,
    );

    expect(await woken).toBe('woken');
    expect(await notWoken).toBe('timedOut');
    await waiters.end();
  });
});

describe('waiters woken on commit', () => {
  it('a waiter in another process sleeps until the winner commits, then replays: one look, no polling, no 409', async () => {
    const { provider, open, fake } = gatedProvider();
    const events: ChargeOnceEvent[] = [];
    // Two engines: the winner's, and the waiter's (as in another process).
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 20_000 },
      onEvent: (e) => events.push(e),
    });
    const other = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 20_000 },
      onEvent: (e) => events.push(e),
    });
    const key = aKey();
    const winner = engine.processCharge(key, aRequest());
    await waitFor(() => Promise.resolve(events.some((e) => e.type === 'claimed')));

    const heard: string[] = [];
    const listening = await db.pgPool.connect();
    const onNotification = (message: { payload?: string }) => heard.push(message.payload ?? '');
    (listening as unknown as NodeJS.EventEmitter).on('notification', onNotification);
    await listening.query({ text: `LISTEN ${WAITERS_CHANNEL}` });

    const waiter = other.processCharge(key, aRequest());
    await waitFor(() => hasWaiters(key));
    // The winner takes its time at the provider; a polling waiter would look again and again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    open();
    const [won, waited] = await Promise.all([winner, waiter]);

    expect(won.replayed).toBe(false);
    expect(waited).toMatchObject({ replayed: true, body: won.body });
    // The waiter looked once and waited (a poller would have looked again and again), was never
    // refused, and read the outcome once woken.
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'waiting')).toHaveLength(1);
    expect(types.filter((t) => t === 'conflict')).toHaveLength(0);
    expect(types.filter((t) => t === 'replayed')).toHaveLength(1);
    expect(fake.ledger()).toHaveLength(1);
    // The winner's completion sent the wake-up, naming the key.
    await waitFor(() => Promise.resolve(heard.length > 0));
    expect(heard).toEqual([
      waiterPayload('chargeonce', { merchantId: 'm_1', operation: 'charge', key }),
    ]);
    await listening.query({ text: `UNLISTEN ${WAITERS_CHANNEL}` });
    listening.release();
    await engine.close();
    await other.close();
  });

  it('a refund waiter in another process is woken by the refund completion naming its key', async () => {
    const fake = createFakeProvider();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const provider: PaymentProvider = {
      createCharge: (input, options) => fake.createCharge(input, options),
      findCharge: (key, options) => fake.findCharge(key, options),
      createRefund: async (input, options) => {
        await gate;
        return fake.createRefund(input, options);
      },
      findRefund: (key, options) => fake.findRefund(key, options),
    };
    const events: ChargeOnceEvent[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 20_000 },
      onEvent: (e) => events.push(e),
    });
    const other = createChargeEngine({ pool: db.pgPool, provider, inProgress: { waitMs: 20_000 } });
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId: 'm_wait_refund' }));
    const request = { merchantId: 'm_wait_refund', chargeId: charge.chargeId, amountMinor: 5 };
    const key = aKey();
    const winner = engine.processRefund(key, request);
    await waitFor(() =>
      Promise.resolve(events.some((e) => e.type === 'claimed' && e.operation === 'refund')),
    );

    const heard: string[] = [];
    const listening = await db.pgPool.connect();
    const onNotification = (message: { payload?: string }) => heard.push(message.payload ?? '');
    (listening as unknown as NodeJS.EventEmitter).on('notification', onNotification);
    await listening.query({ text: `LISTEN ${WAITERS_CHANNEL}` });

    const waiter = other.processRefund(key, request);
    await waitFor(() => hasWaiters(key));
    open();
    const [won, waited] = await Promise.all([winner, waiter]);

    expect(waited).toMatchObject({ replayed: true, body: won.body });
    // The refund's completion sent the wake-up, naming the refund key.
    await waitFor(() => Promise.resolve(heard.length > 0));
    expect(heard).toEqual([
      waiterPayload('chargeonce', { merchantId: 'm_wait_refund', operation: 'refund', key }),
    ]);
    await listening.query({ text: `UNLISTEN ${WAITERS_CHANNEL}` });
    listening.release();
    await engine.close();
    await other.close();
  });

  it('a storm on one key from two engines: one claim, one wait, one mark, one outcome for all', async () => {
    const { provider, open, fake } = gatedProvider();
    const events: ChargeOnceEvent[] = [];
    const engines = [0, 1].map(() =>
      createChargeEngine({
        pool: db.pgPool,
        provider,
        inProgress: { waitMs: 20_000 },
        onEvent: (e) => events.push(e),
      }),
    );
    const key = aKey();
    const callers = engines.flatMap((engine) =>
      Array.from({ length: 8 }, () => engine.processCharge(key, aRequest())),
    );
    await waitFor(() => hasWaiters(key).catch(() => false));
    open();

    const outcomes = await Promise.all(callers);

    expect(new Set(outcomes.map((o) => o.body)).size).toBe(1);
    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    expect(fake.ledger()).toHaveLength(1);
    // The callers of each engine joined its one attempt: one claim, one wait (then one replay),
    // and every other caller a replay of its engine's attempt; nobody was refused.
    expect(events.filter((e) => e.type === 'claimed')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'waiting')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'conflict')).toHaveLength(0);
    expect(events.filter((e) => e.type === 'replayed')).toHaveLength(15);
    await Promise.all(engines.map((engine) => engine.close()));
  });

  it('callers of one engine on one key share its attempt: one claim, the rest replays', async () => {
    const fake = createFakeProvider();
    const events: ChargeOnceEvent[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: fake,
      inProgress: { waitMs: 5_000 },
      onEvent: (e) => events.push(e),
    });
    const key = aKey();

    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () => engine.processCharge(key, aRequest())),
    );
    const refused: unknown = await engine
      .processCharge(key, aRequest({ amountMinor: 9 }))
      .catch((e: unknown) => e);

    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    expect(new Set(outcomes.map((o) => o.body)).size).toBe(1);
    expect(events.filter((e) => e.type === 'claimed')).toHaveLength(1);
    // Each caller that joined is a replay, reported as one (events, and so the metrics).
    expect(events.filter((e) => e.type === 'replayed')).toHaveLength(11);
    expect(fake.ledger()).toHaveLength(1);
    // A different request under the key never joins: it is refused as always.
    expect(refused).toMatchObject({ code: 'idempotency_key_reused' });
    await engine.close();
  });

  it('a listener killed mid-wait: the waiter looks again, listens anew, and still gets the outcome', async () => {
    const { provider, open, fake } = gatedProvider();
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 20_000 },
    });
    const other = createChargeEngine({ pool: db.pgPool, provider, inProgress: { waitMs: 20_000 } });
    const key = aKey();
    const winner = engine.processCharge(key, aRequest());
    // The winner's claim is in: the key exists.
    await waitFor(() =>
      hasWaiters(key).then(
        () => true,
        () => false,
      ),
    );
    const waiter = other.processCharge(key, aRequest());
    await waitFor(() => hasWaiters(key));

    const listeners = () =>
      db.pool.anyFirst(
        sql.type(z.object({ pid: z.number() }))`
          SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND query = ${`LISTEN ${WAITERS_CHANNEL}`}`,
      );
    const killed = await listeners();
    expect(killed).toHaveLength(1);
    await db.pool.query(sql.unsafe`SELECT pg_terminate_backend(${killed[0] as number})`);
    // The waiter was woken by the drop, met the key in progress again and listens anew.
    await waitFor(async () => (await listeners()).some((pid) => pid !== killed[0]));
    open();

    const [won, waited] = await Promise.all([winner, waiter]);
    expect(waited).toMatchObject({ replayed: true, body: won.body });
    expect(fake.ledger()).toHaveLength(1);
    await engine.close();
    await other.close();
  });

  it('a key nobody waits on is completed without a mark', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      inProgress: { waitMs: 1_000 },
    });
    const key = aKey();
    await engine.processCharge(key, aRequest());

    expect(await hasWaiters(key)).toBe(false);
    await engine.close();
  });
});
