import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { sql } from 'slonik';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  type ChargeEngineOptions,
  type ChargeOnceEvent,
} from '../../src/index.js';
import { createFakeProvider, type FakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, expireLease, seedInterruptedKey, waitFor } from '../support/charges.js';
import { gatedProvider } from '../support/gatedProvider.js';

// The typed events, as `onEvent` and a pino-compatible logger receive them.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function recording(options: Partial<ChargeEngineOptions> = {}) {
  const events: ChargeOnceEvent[] = [];
  const provider: FakeProvider = createFakeProvider();
  const engine = createChargeEngine({
    pool: db.pgPool,
    provider,
    sweepGraceMs: 0,
    onEvent: (event) => events.push(event),
    ...options,
  });
  const ofType = <T extends ChargeOnceEvent['type']>(type: T) =>
    events.filter((e): e is Extract<ChargeOnceEvent, { type: T }> => e.type === type);
  return { engine, provider, events, ofType };
}

/** A charge that succeeds, and its retry that replays it: what a broken listener must not stop. */
async function chargesAndReplays(engine: ReturnType<typeof createChargeEngine>): Promise<void> {
  const key = aKey();
  await expect(engine.processCharge(key, aRequest())).resolves.toMatchObject({
    status: 'succeeded',
  });
  await expect(engine.processCharge(key, aRequest())).resolves.toMatchObject({ replayed: true });
}

describe('events', () => {
  it('a fresh charge is claimed from new; its retry is a replay; a different request is reused', async () => {
    const { engine, events, ofType } = recording();
    const key = aKey();
    const merchantId = 'm_events';

    const first = await engine.processCharge(key, aRequest({ merchantId }));
    await engine.processCharge(key, aRequest({ merchantId }));
    await engine.processCharge(key, aRequest({ merchantId, amountMinor: 1 })).catch(() => null);

    expect(events.map((e) => e.type)).toEqual(['claimed', 'replayed', 'reused']);
    expect(ofType('claimed')[0]).toEqual({
      type: 'claimed',
      merchantId,
      operation: 'charge',
      key,
      chargeId: first.chargeId,
      from: 'new',
      attempt: 1,
    });
    expect(ofType('replayed')[0]).toMatchObject({ status: 'succeeded', httpStatus: 201 });
    expect(ofType('reused')[0]?.differingFields).toEqual(['amountMinor']);
    // Nothing of the request's metadata or amounts rides along.
    expect(JSON.stringify(events)).not.toContain('2000');
  });

  it('a key in use is a conflict with its retry delay', async () => {
    const { engine, provider, ofType } = recording({ leaseMs: 2_000, providerTimeoutMs: 300 });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_events_conflict' });
    provider.failNext('hang');
    const holder = engine.processCharge(key, request).catch(() => null);
    await waitFor(() => Promise.resolve(ofType('claimed').length === 1));

    await engine.processCharge(key, request).catch(() => null);
    await holder;

    expect(ofType('conflict')).toEqual([
      expect.objectContaining({ key, retryAfterMs: expect.any(Number) as number }),
    ]);
  });

  it('a caller that waits on a key in progress is a wait, then a 409 only if the wait runs out', async () => {
    const { provider, open } = gatedProvider();
    const holder = recording({ provider, inProgress: { waitMs: 20_000 } });
    const waiter = recording({ provider, inProgress: { waitMs: 300 } });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_events_wait' });
    const held = holder.engine.processCharge(key, request);
    await waitFor(() => Promise.resolve(holder.ofType('claimed').length === 1));

    const refused = await waiter.engine.processCharge(key, request).catch((e: unknown) => e);
    open();
    await held;

    expect(refused).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(waiter.ofType('waiting').length).toBeGreaterThanOrEqual(1);
    expect(waiter.ofType('waiting')[0]).toMatchObject({
      key,
      leftMs: expect.any(Number) as number,
    });
    // One refusal, the one the caller got: not one for each look while it waited.
    expect(waiter.ofType('conflict')).toEqual([
      expect.objectContaining({ key, retryAfterMs: expect.any(Number) as number }),
    ]);
    await holder.engine.close();
    await waiter.engine.close();
  });

  it('callers of one engine that share an attempt are each a replay, none a conflict', async () => {
    const { engine, ofType } = recording({ inProgress: { waitMs: 5_000 } });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_events_join' });

    const outcomes = await Promise.all([1, 2, 3].map(() => engine.processCharge(key, request)));

    expect(outcomes.filter((o) => o.replayed)).toHaveLength(2);
    expect(ofType('claimed')).toHaveLength(1);
    expect(ofType('replayed')).toEqual([
      expect.objectContaining({ key, chargeId: outcomes[0]?.chargeId, httpStatus: 201 }),
      expect.objectContaining({ key, chargeId: outcomes[0]?.chargeId, httpStatus: 201 }),
    ]);
    expect(ofType('conflict')).toHaveLength(0);
    await engine.close();
  });

  it('a takeover that finds the charge adopts it; a transient provider failure is reported', async () => {
    const { engine, provider, ofType } = recording();
    const merchantId = 'm_events_adopt';
    const key = aKey();
    provider.failNext('failAfterCharge');

    await engine.processCharge(key, aRequest({ merchantId })).catch(() => null);
    await engine.processCharge(key, aRequest({ merchantId }));

    expect(ofType('provider_failed')).toEqual([
      expect.objectContaining({ key, transient: true, errorCode: 'provider_unavailable' }),
    ]);
    expect(ofType('claimed').map((e) => [e.from, e.attempt])).toEqual([
      ['new', 1],
      ['reserved', 2],
    ]);
    expect(ofType('adopted')).toEqual([
      expect.objectContaining({
        key,
        by: 'client',
        providerChargeId: expect.any(String) as string,
      }),
    ]);
  });

  it('the sweeper cancels, parks and reports its pass; the reaper reports its pass', async () => {
    const { engine, provider, ofType } = recording({ maxAttempts: 1 });
    const merchantId = 'm_events_sweep';
    // A key completed a year ago, past any retention an engine of this file recorded: reaped.
    const old = aKey();
    await engine.processCharge(old, aRequest({ merchantId }));
    const abandoned = aKey();
    await seedInterruptedKey(db.pool, db.tables, abandoned, aRequest({ merchantId }), 'reserved');
    await expireLease(db.pool, db.tables, merchantId, abandoned);

    await engine.sweep();
    provider.outage(10);
    const stuck = aKey();
    await seedInterruptedKey(db.pool, db.tables, stuck, aRequest({ merchantId }), 'reserved');
    await expireLease(db.pool, db.tables, merchantId, stuck);
    await engine.sweep();
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET completed_at = now() - interval '365 days'
      WHERE merchant_id = ${merchantId} AND key = ${old}`);
    await engine.reap();
    await engine.requeue({ merchantId, key: stuck, actor: 'ops@example', reason: 'checked' });

    expect(ofType('cancelled').map((e) => e.key)).toContain(abandoned);
    expect(ofType('parked')).toEqual([
      expect.objectContaining({ key: stuck, reason: expect.any(String) as string }),
    ]);
    expect(ofType('swept').length).toBeGreaterThanOrEqual(2);
    expect(ofType('swept')[0]?.result.cancelled).toBeGreaterThanOrEqual(1);
    expect(ofType('requeued')).toEqual([
      { type: 'requeued', merchantId, operation: 'charge', key: stuck, by: 'ops@example' },
    ]);
    expect(ofType('reaped')).toEqual([
      {
        type: 'reaped',
        reaped: 1,
        durationMs: expect.any(Number) as number,
        // The engine's default windows: none longer recorded in this database.
        retentionMs: 72 * 3_600_000,
        tombstoneRetentionMs: 30 * 86_400_000,
      },
    ]);
  });

  it('a throwing onEvent or logger never breaks a charge', async () => {
    const silenced = console.error;
    console.error = () => {};
    try {
      const engine = createChargeEngine({
        pool: db.pgPool,
        provider: createFakeProvider(),
        onEvent: () => {
          throw new Error('handler bug');
        },
        logger: {
          debug: () => {
            throw new Error('logger bug');
          },
          info: () => {},
          warn: () => {},
          error: () => {},
        },
      });
      await chargesAndReplays(engine);
    } finally {
      console.error = silenced;
    }
  });

  it('an async onEvent or logger that rejects breaks neither a charge nor the process', async () => {
    const silenced = console.error;
    const complaints: unknown[] = [];
    console.error = (...args: unknown[]) => complaints.push(args[1]);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const rejectLater = (message: string) => () => Promise.reject(new Error(message));
      const engine = createChargeEngine({
        pool: db.pgPool,
        provider: createFakeProvider(),
        // Async where a plain function is asked for: what an async handler or logger gives.
        // eslint-disable-next-line @typescript-eslint/no-misused-promises
        onEvent: rejectLater('handler bug'),
        logger: {
          // eslint-disable-next-line @typescript-eslint/no-misused-promises
          debug: rejectLater('logger bug'),
          info: () => {},
          warn: () => {},
          error: () => {},
        },
      });
      await chargesAndReplays(engine);
      // An unhandled rejection is reported after the microtask queue drains.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
      expect(complaints).toEqual([expect.objectContaining({ message: 'handler bug' })]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      console.error = silenced;
    }
  });

  it('logs each event at its level through a pino-compatible logger', async () => {
    const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
    const at =
      (level: string) =>
      (fields: object, message: string): void => {
        lines.push({ level, fields: fields as Record<string, unknown>, message });
      };
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
    });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    await engine.processCharge(key, aRequest({ amountMinor: 5 })).catch(() => null);

    expect(lines.map((l) => [l.level, l.fields.event, l.message])).toEqual([
      ['debug', 'claimed', 'chargeonce claimed'],
      ['warn', 'reused', 'chargeonce reused'],
    ]);
    expect(lines[1]?.fields).toMatchObject({ key, differingFields: ['amountMinor'] });
  });

  it('through pino itself: one JSON line per event at its level, no metadata value in any', async () => {
    const written: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString());
        done();
      },
    });
    const { engine, provider } = recording({ logger: pino({ level: 'debug' }, destination) });
    const key = aKey();
    const request = aRequest({ metadata: { secret: 's3cr3t' } });
    await engine.processCharge(key, request);
    await engine.processCharge(key, request);
    await engine.processCharge(key, { ...request, amountMinor: 5 }).catch(() => null);
    provider.failNext('failBeforeCharge');
    await engine.processCharge(aKey(), request).catch(() => null);

    const logged = written
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; event: string; msg: string });
    // pino's levels: 20 debug, 30 info, 40 warn, 50 error.
    expect(logged.map((l) => [l.level, l.event, l.msg])).toEqual([
      [20, 'claimed', 'chargeonce claimed'],
      [20, 'replayed', 'chargeonce replayed'],
      [40, 'reused', 'chargeonce reused'],
      [20, 'claimed', 'chargeonce claimed'],
      [40, 'provider_failed', 'chargeonce provider_failed'],
    ]);
    expect(written.join('')).not.toContain('s3cr3t');
    await engine.close();
  });
});
