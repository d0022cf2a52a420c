import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { context } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createChargeEngine, type ChargeEngineOptions } from '../../src/index.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aManualClock } from '../support/manualClock.js';
import { useTelemetrySdk } from '../support/telemetrySdk.js';
import { aKey, aRequest, expireLease, seedInterruptedKey, waitFor } from '../support/charges.js';

// Spans and metric points through the OpenTelemetry SDK's in-memory exporters.

const sdk = useTelemetrySdk();
const { spans, tracerProvider, contextManager, named, metric, histogramCount, sum } = sdk;

function engineWith(options: Partial<ChargeEngineOptions> = {}) {
  const provider = createFakeProvider();
  const engine = createChargeEngine({
    pool: sdk.db.pgPool,
    provider,
    sweepGraceMs: 0,
    telemetry: {
      tracer: tracerProvider.getTracer('test'),
      meter: sdk.meter(),
    },
    ...options,
  });
  return { engine, provider };
}

const only = (name: string): ReadableSpan => {
  const found = named(name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReadableSpan;
};
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

/** Marks a completed key as completed a year ago. */
const backdateCompletion = (merchantId: string, key: string) =>
  sdk.db.pool.query(sql.unsafe`
    UPDATE ${sdk.db.tables.keys} SET completed_at = now() - interval '365 days'
    WHERE merchant_id = ${merchantId} AND key = ${key}`);

describe('OpenTelemetry', () => {
  it('a fresh charge: one process span with claim, provider and completion children', async () => {
    const { engine } = engineWith();
    const merchantId = 'm_otel_fresh';
    await engine.processCharge(aKey(), aRequest({ merchantId, metadata: { secret: 's3cr3t' } }));

    const root = only('chargeonce.process_charge');
    expect(root.attributes).toMatchObject({
      'chargeonce.merchant_id': merchantId,
      'chargeonce.operation': 'charge',
      'chargeonce.outcome.status': 'succeeded',
      'chargeonce.replayed': false,
      'chargeonce.recovery_point': 'new',
      'chargeonce.attempt': 1,
      'chargeonce.adopted': false,
    });
    expect(root.attributes['chargeonce.key']).toBeUndefined();
    for (const child of ['chargeonce.claim', 'chargeonce.provider.create', 'chargeonce.complete']) {
      expect(parentOf(only(child)), child).toBe(root.spanContext().spanId);
    }
    expect(only('chargeonce.claim').attributes).toMatchObject({
      'db.system.name': 'postgresql',
      // The schema qualified by the database, after OpenTelemetry's PostgreSQL conventions.
      'db.namespace': `${sdk.db.name}.chargeonce`,
    });
    const everything = JSON.stringify(spans.getFinishedSpans().map((s) => s.attributes));
    expect(everything).not.toContain('s3cr3t');

    expect(await sum('chargeonce.charges', { 'chargeonce.outcome.status': 'succeeded' })).toBe(1);
    const duration = await metric('chargeonce.process_charge.duration');
    expect(duration?.dataPoints).toHaveLength(1);
    expect(await histogramCount('chargeonce.phase.duration', { 'chargeonce.phase': 'claim' })).toBe(
      1,
    );
    expect(
      await histogramCount('chargeonce.phase.duration', { 'chargeonce.phase': 'complete' }),
    ).toBe(1);
    expect(
      await histogramCount('chargeonce.provider.duration', {
        'chargeonce.provider.call': 'create',
        'chargeonce.provider.outcome': 'answered',
      }),
    ).toBe(1);
    expect(
      await sum('chargeonce.claims', {
        'chargeonce.operation': 'charge',
        'chargeonce.from': 'new',
      }),
    ).toBe(1);
  });

  it('a replay: replayed, from completed, one span and no child (it is one statement); the key when opted in', async () => {
    const { engine } = engineWith({
      telemetry: {
        tracer: tracerProvider.getTracer('test'),
        meter: sdk.meter(),
        recordKeys: true,
      },
    });
    const key = aKey();
    await engine.processCharge(key, aRequest());
    spans.reset();

    await engine.processCharge(key, aRequest());

    const root = only('chargeonce.process_charge');
    expect(root.attributes).toMatchObject({
      'chargeonce.replayed': true,
      'chargeonce.recovery_point': 'completed',
      'chargeonce.key': key,
    });
    expect(spans.getFinishedSpans().map((span) => span.name)).toEqual([
      'chargeonce.process_charge',
    ]);
    expect(await sum('chargeonce.replays')).toBe(1);
    expect(await sum('chargeonce.charges', { 'chargeonce.replayed': true })).toBe(1);
    // The replay's time is its end-to-end duration; no phase of it is recorded a second time.
    expect(await histogramCount('chargeonce.phase.duration', { 'chargeonce.phase': 'claim' })).toBe(
      1,
    );
    expect(await histogramCount('chargeonce.process_charge.duration')).toBe(2);
    // Timed apart from fresh charges: a replay is one statement.
    for (const replayed of [true, false]) {
      expect(
        await histogramCount('chargeonce.process_charge.duration', {
          'chargeonce.operation': 'charge',
          'chargeonce.replayed': replayed,
        }),
      ).toBe(1);
    }
  });

  it('counters summed in process read the same at every collection, across engines on one meter', async () => {
    const first = engineWith().engine;
    const second = engineWith().engine;
    const key = aKey();
    await first.processCharge(key, aRequest());
    await first.processCharge(key, aRequest());
    expect(await sum('chargeonce.replays')).toBe(1);

    await second.processCharge(key, aRequest());
    await first.processCharge(key, aRequest());
    expect(await sum('chargeonce.replays')).toBe(3);
    expect(await sum('chargeonce.charges', { 'chargeonce.replayed': true })).toBe(3);
    expect(await sum('chargeonce.charges', { 'chargeonce.replayed': false })).toBe(1);
    // Nothing more happened: a further collection adds nothing.
    expect(await sum('chargeonce.replays')).toBe(3);
  });

  it('a claim span is the parent of the spans of a reserve hook, which runs inside the claim', async () => {
    const hookTracer = tracerProvider.getTracer('caller');
    const { engine } = engineWith({
      hooks: {
        reserve: () => {
          hookTracer.startSpan('caller.reserve_stock').end();
          return Promise.resolve();
        },
      },
    });
    await engine.processCharge(aKey(), aRequest());

    expect(parentOf(only('caller.reserve_stock'))).toBe(
      only('chargeonce.claim').spanContext().spanId,
    );
  });

  it('a refund: its own span with claim, provider and completion children; counted by operation', async () => {
    const { engine } = engineWith();
    const merchantId = 'm_otel_refund';
    const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 500 }));
    const key = aKey();
    const request = { merchantId, chargeId: charge.chargeId, amountMinor: 200 };
    spans.reset();

    await engine.processRefund(key, request);
    const root = only('chargeonce.process_refund');
    const children = ['chargeonce.claim', 'chargeonce.provider.create', 'chargeonce.complete'];
    for (const child of children) {
      expect(parentOf(only(child)), child).toBe(root.spanContext().spanId);
      expect(only(child).attributes['chargeonce.operation'], child).toBe('refund');
    }
    expect(root.attributes).toMatchObject({
      'chargeonce.operation': 'refund',
      'chargeonce.outcome.status': 'succeeded',
      'chargeonce.replayed': false,
      'chargeonce.recovery_point': 'new',
    });
    spans.reset();

    await engine.processRefund(key, request);
    expect(spans.getFinishedSpans().map((span) => span.name)).toEqual([
      'chargeonce.process_refund',
    ]);
    const counted = { 'chargeonce.operation': 'refund', 'chargeonce.outcome.status': 'succeeded' };
    expect(await sum('chargeonce.charges', { ...counted, 'chargeonce.replayed': false })).toBe(1);
    expect(await sum('chargeonce.charges', { ...counted, 'chargeonce.replayed': true })).toBe(1);
  });

  it('callers that waited on a shared attempt are counted as the replays they got, not as 409s', async () => {
    const { engine } = engineWith({ inProgress: { waitMs: 5_000 } });
    const key = aKey();

    const outcomes = await Promise.all([1, 2, 3].map(() => engine.processCharge(key, aRequest())));

    expect(outcomes.filter((o) => o.replayed)).toHaveLength(2);
    expect(await sum('chargeonce.charges', { 'chargeonce.replayed': true })).toBe(2);
    expect(await sum('chargeonce.replays')).toBe(2);
    expect(await sum('chargeonce.conflicts')).toBe(0);
    await engine.close();
  });

  it('a 400 is counted once, whether the HTTP edge refused it or the engine did', async () => {
    const { engine } = engineWith();
    const handler = createFetchHandler({ engine, authenticate: () => 'm_edge_400' });
    const post = (path: string, key: string | null, body: string) =>
      handler(
        new Request(`http://shop.test${path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(key === null ? {} : { 'idempotency-key': key }),
          },
          body,
        }),
      );
    const charge = JSON.stringify({ customerId: 'c_1', amountMinor: 500, currency: 'NGN' });

    const statuses = [
      // The edge's own: no key, a body that is not JSON, a refund of a charge id that is none.
      (await post('/charges', null, charge)).status,
      (await post('/charges', aKey(), '{"amountMinor":')).status,
      (await post('/charges/not%20an%20id/refunds', aKey(), '{"amountMinor":5}')).status,
      // The engine's: the body is JSON, its amount is not one.
      (await post('/charges', aKey(), charge.replace('500', '-5'))).status,
      (await post('/charges', aKey(), charge)).status,
    ];

    expect(statuses).toEqual([400, 400, 400, 400, 201]);
    expect(await sum('chargeonce.invalid_requests', { 'chargeonce.operation': 'charge' })).toBe(3);
    expect(await sum('chargeonce.invalid_requests', { 'chargeonce.operation': 'refund' })).toBe(1);
    await engine.close();
  });

  it('a 409 and a 422 end their spans with the error code, and are counted', async () => {
    const { engine, provider } = engineWith({ leaseMs: 2_000, providerTimeoutMs: 300 });
    const used = aKey();
    await engine.processCharge(used, aRequest());
    const held = aKey();
    provider.failNext('hang');
    const holder = engine.processCharge(held, aRequest()).catch(() => null);
    // The holder is past its claim once it asks the provider.
    await waitFor(() => Promise.resolve(provider.calls.createCharge === 2));
    spans.reset();

    await engine.processCharge(held, aRequest()).catch(() => null);
    await holder;
    await engine.processCharge(used, aRequest({ amountMinor: 3 })).catch(() => null);
    await engine.processCharge('', aRequest()).catch(() => null);

    expect(named('chargeonce.process_charge').map((s) => s.attributes['error.type'])).toEqual([
      'idempotency_key_in_use',
      'provider_unavailable',
      'idempotency_key_reused',
      'invalid_request',
    ]);
    expect(await sum('chargeonce.conflicts')).toBe(1);
    expect(await sum('chargeonce.reuses')).toBe(1);
    expect(await sum('chargeonce.invalid_requests')).toBe(1);
  });

  it('a refused request (400): its span ends at once with the error code, the merchant on it', async () => {
    const { engine } = engineWith();
    const merchantId = 'm_otel_400';
    await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: -5 })).catch(() => null);
    await engine
      .processRefund(aKey(), { merchantId, chargeId: 'not a charge id', amountMinor: 5 })
      .catch(() => null);
    // A request that is not even an object: a span still, with no merchant to name.
    await engine.processCharge(aKey(), null as never).catch(() => null);

    const refused = spans
      .getFinishedSpans()
      .map((s) => [s.name, s.attributes['error.type'], s.attributes['chargeonce.merchant_id']]);
    expect(refused).toEqual([
      ['chargeonce.process_charge', 'invalid_request', merchantId],
      ['chargeonce.process_refund', 'invalid_request', merchantId],
      ['chargeonce.process_charge', 'invalid_request', undefined],
    ]);
    expect(await sum('chargeonce.invalid_requests')).toBe(3);
    await engine.close();
  });

  it.each([
    ['its lease renewal before the provider call', false],
    ['its reserve step, claimed on its own', true],
  ])(
    'an attempt that lost its lease at %s ends in a 409, counted in conflicts as every 409 is',
    async (_where, separateClaim) => {
      const key = aKey();
      const request = aRequest({ merchantId: 'm_otel_lease_lost' });
      const clock = aManualClock();
      const { engine: sweeper } = engineWith({ clock });
      const { engine, provider } = engineWith({
        clock,
        separateClaim,
        faults: {
          shouldCrash: () => false,
          // The claim's acknowledgement is held up past the lease; a sweeper takes the key.
          stall: (point) =>
            point === 'afterClaimCommit'
              ? (async () => {
                  await expireLease(sdk.db.pool, sdk.db.tables, request.merchantId, key);
                  clock.advance(30_000);
                  await sweeper.sweep();
                })()
              : undefined,
        },
      });

      await expect(engine.processCharge(key, request)).rejects.toMatchObject({
        code: 'idempotency_key_in_use',
      });

      expect(provider.calls.createCharge).toBe(0);
      expect(await sum('chargeonce.lease_lost')).toBe(1);
      expect(await sum('chargeonce.conflicts')).toBe(1);
      await engine.close();
      await sweeper.close();
    },
  );

  it('an adoption by a client retry: a find span, adopted, counted by who adopted', async () => {
    const { engine, provider } = engineWith();
    const key = aKey();
    provider.failNext('failAfterCharge');
    await engine.processCharge(key, aRequest()).catch(() => null);
    spans.reset();

    await engine.processCharge(key, aRequest());

    const root = only('chargeonce.process_charge');
    expect(root.attributes).toMatchObject({
      'chargeonce.adopted': true,
      'chargeonce.recovery_point': 'reserved',
      'chargeonce.attempt': 2,
    });
    expect(parentOf(only('chargeonce.provider.find'))).toBe(root.spanContext().spanId);
    expect(await sum('chargeonce.adoptions', { 'chargeonce.by': 'client' })).toBe(1);
    expect(await sum('chargeonce.provider.failures', { 'chargeonce.failure': 'transient' })).toBe(
      1,
    );
    // Both attempts took the key: the first as new, the retry from where the first stopped.
    expect(await sum('chargeonce.claims', { 'chargeonce.from': 'new' })).toBe(1);
    expect(await sum('chargeonce.claims', { 'chargeonce.from': 'reserved' })).toBe(1);
    expect(
      await histogramCount('chargeonce.provider.duration', {
        'chargeonce.provider.call': 'create',
        'chargeonce.provider.outcome': 'transient',
      }),
    ).toBe(1);
  });

  it('a key parked by the sweeper, then requeued and resolved by a person: counted by action', async () => {
    const { engine, provider } = engineWith({ maxAttempts: 1 });
    const merchantId = 'm_otel_parked';
    const parkedKeys = [aKey(), aKey()];
    provider.outage(10);
    for (const key of parkedKeys) {
      await seedInterruptedKey(
        sdk.db.pool,
        sdk.db.tables,
        key,
        aRequest({ merchantId }),
        'reserved',
      );
      await expireLease(sdk.db.pool, sdk.db.tables, merchantId, key);
    }
    await engine.sweep();
    expect(await sum('chargeonce.parked', { 'chargeonce.operation': 'charge' })).toBe(2);

    const [requeued, resolved] = parkedKeys as [string, string];
    const who = { merchantId, actor: 'ops@example', reason: 'checked with the provider' };
    expect(await engine.requeue({ ...who, key: requeued })).toBe(true);
    await engine.resolve({ ...who, key: resolved, outcome: 'cancelled' });

    for (const action of ['requeued', 'resolved']) {
      expect(
        await sum('chargeonce.admin_actions', {
          'chargeonce.operation': 'charge',
          'chargeonce.action': action,
        }),
        action,
      ).toBe(1);
    }
  });

  it("a sweeper adoption: counted by who adopted; the pass span carries no one key's attributes", async () => {
    const { engine, provider } = engineWith();
    const merchantId = 'm_otel_sweep_adopt';
    const key = aKey();
    provider.failNext('failAfterCharge');
    await engine.processCharge(key, aRequest({ merchantId })).catch(() => null);
    await expireLease(sdk.db.pool, sdk.db.tables, merchantId, key);
    spans.reset();

    await engine.sweep();

    const pass = only('chargeonce.sweep');
    expect(pass.attributes['chargeonce.sweep.adopted']).toBeGreaterThanOrEqual(1);
    expect(pass.attributes).not.toHaveProperty('chargeonce.adopted');
    expect(pass.attributes).not.toHaveProperty('chargeonce.recovery_point');
    expect(await sum('chargeonce.adoptions', { 'chargeonce.by': 'sweeper' })).toBe(1);
  });

  it('recovery started with the engine: its first pass is counted', async () => {
    const merchantId = 'm_otel_recovery';
    const key = aKey();
    await seedInterruptedKey(sdk.db.pool, sdk.db.tables, key, aRequest({ merchantId }), 'started');
    await expireLease(sdk.db.pool, sdk.db.tables, merchantId, key);
    const { engine } = engineWith();
    const stop = new AbortController();
    const passes: number[] = [];

    // At once, before anything else asked the engine for anything.
    const loop = engine.startRecovery({
      intervalMs: 60_000,
      signal: stop.signal,
      onPass: ({ swept }) => passes.push(swept.examined),
    });
    await waitFor(() => Promise.resolve(passes.length > 0));
    stop.abort();
    await loop;

    expect(passes[0]).toBeGreaterThanOrEqual(1);
    expect(named('chargeonce.sweep').length).toBeGreaterThanOrEqual(1);
    expect(await sum('chargeonce.sweep.keys')).toBeGreaterThanOrEqual(1);
    await engine.close();
  });

  it('warns once when spans are recorded with no context manager to carry them', async () => {
    const warnings: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args[0]);
    context.disable();
    try {
      const { engine } = engineWith();
      await engine.processCharge(aKey(), aRequest());
      await engine.processCharge(aKey(), aRequest());
      expect(warnings).toEqual([expect.stringContaining('no OpenTelemetry context manager')]);
    } finally {
      console.warn = warn;
      context.setGlobalContextManager(contextManager.enable());
    }
    // With one registered, an engine says nothing.
    const { engine } = engineWith();
    await engine.processCharge(aKey(), aRequest());
    expect(warnings).toHaveLength(1);
  });

  it('a sweeper cancel and a reap: their pass spans and counts; the unfinished-key gauges', async () => {
    const { engine } = engineWith();
    const merchantId = 'm_otel_sweep';
    const key = aKey();
    await seedInterruptedKey(sdk.db.pool, sdk.db.tables, key, aRequest({ merchantId }), 'reserved');
    await expireLease(sdk.db.pool, sdk.db.tables, merchantId, key);

    const swept = await engine.sweep();
    // One completed key past any retention an engine of this file recorded: the reap takes it.
    const old = aKey();
    await engine.processCharge(old, aRequest({ merchantId }));
    await backdateCompletion(merchantId, old);
    const reaped = await engine.reap();

    expect(swept.cancelled).toBeGreaterThanOrEqual(1);
    // Every count of the pass's result is on its span, the keys it parked or released included.
    const pass = only('chargeonce.sweep').attributes;
    for (const [kind, count] of Object.entries(swept)) {
      expect(pass[`chargeonce.sweep.${kind}`], kind).toBe(count);
    }
    expect(reaped).toBe(1);
    expect(only('chargeonce.reap').attributes['chargeonce.reaped']).toBe(1);
    expect(await sum('chargeonce.reaped')).toBe(1);
    expect(
      await sum('chargeonce.sweep.keys', { 'chargeonce.sweep.result': 'cancelled' }),
    ).toBeGreaterThanOrEqual(1);
    expect(await sum('chargeonce.cancelled')).toBeGreaterThanOrEqual(1);
    const unfinished = await metric('chargeonce.keys.unfinished');
    expect(unfinished?.dataPoints.map((p) => p.attributes['chargeonce.recovery_point'])).toEqual(
      expect.arrayContaining(['started', 'reserved', 'failed']),
    );
    expect(await metric('chargeonce.keys.oldest_unfinished_age')).toBeDefined();
  });
});
