import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  ProviderError,
  ProviderTransientError,
  ProviderUnavailableError,
  type ChargeEngine,
  type ChargeEngineOptions,
  type PaymentProvider,
} from '../../src/index.js';
import {
  EMULATOR_SECRET_KEY,
  startStripeEmulator,
  type StripeEmulator,
} from '../../src/chaos/stripe/startStripeEmulator.js';
import {
  createStripeProvider,
  STRIPE_METADATA_KEYS,
  StripeAdapterError,
  type StripeProviderOptions,
} from '../../src/stripe/index.js';
import { aKey, aRequest, readCharges, readKey } from '../support/charges.js';
import {
  startHttpFaultProxy,
  type FaultChoice,
  type HttpFaultProxy,
} from '../support/httpFaultProxy.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

/*
 * The Stripe adapter through the official SDK against stripe-stateful-mock, a Stripe emulator
 * written by a third party, with a fault proxy between the two. The emulator keeps its charges
 * for the whole process: each test tells its own apart by merchant and provider key.
 */

let db: TestDatabase;
let emulator: StripeEmulator;
let proxy: HttpFaultProxy;
/** Faults for the next exchanges through the proxy, in order; then `pass`. */
const planned: FaultChoice[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  emulator = await startStripeEmulator();
  proxy = await startHttpFaultProxy({
    targetPort: emulator.port,
    choose: () => planned.shift() ?? { fault: 'pass' },
  });
});
afterAll(async () => {
  await proxy?.close();
  await emulator?.close();
  await db?.drop();
});

function stripeClient(port: number, key = EMULATOR_SECRET_KEY): Stripe {
  return new Stripe(key, { host: '127.0.0.1', port, protocol: 'http', telemetry: false });
}

/** The adapter, talking to the emulator through the fault proxy. */
function provider(options: Partial<StripeProviderOptions> = {}): PaymentProvider {
  return createStripeProvider({ stripe: stripeClient(proxy.port), ...options });
}

function engineOn(
  stripeProvider: PaymentProvider,
  options: Partial<ChargeEngineOptions> = {},
): ChargeEngine {
  return createChargeEngine({
    pool: db.pgPool,
    provider: stripeProvider,
    leaseMs: 10_000,
    providerTimeoutMs: 3_000,
    ...options,
  });
}

/** Every charge the emulator holds, read past the proxy. */
async function emulatorCharges(): Promise<Stripe.Charge[]> {
  const stripe = stripeClient(emulator.port);
  const charges: Stripe.Charge[] = [];
  for await (const charge of stripe.charges.list({ limit: 100 })) charges.push(charge);
  return charges;
}

/** The emulator's charges made under a merchant's provider keys, as the local rows name them. */
async function chargesOf(merchantId: string): Promise<Stripe.Charge[]> {
  const keys = new Set(
    (await readCharges(db.pool, db.tables, merchantId)).map((c) => c.provider_key),
  );
  return (await emulatorCharges()).filter((c) =>
    keys.has(c.metadata[STRIPE_METADATA_KEYS.providerKey] ?? ''),
  );
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

const signal = () => AbortSignal.timeout(5_000);
const input = (providerKey: string, overrides: Record<string, unknown> = {}) => ({
  providerKey,
  merchantId: 'm_stripe_direct',
  chargeId: randomUUID(),
  customerId: 'tok_visa',
  amountMinor: 2_000,
  currency: 'NGN',
  ...overrides,
});

describe('createStripeProvider through the engine', () => {
  it('a fresh charge: one Stripe charge, carrying the provider key in its metadata', async () => {
    const merchantId = 'm_stripe_fresh';
    const outcome = await engineOn(provider()).processCharge(
      aKey(),
      aRequest({
        merchantId,
        customerId: 'tok_visa',
        amountMinor: 4_250,
        currency: 'USD',
        description: 'Order 77',
        metadata: { order: '77' },
      }),
    );

    expect(outcome).toMatchObject({ status: 'succeeded', httpStatus: 201, replayed: false });
    const [local] = await readCharges(db.pool, db.tables, merchantId);
    const charges = await chargesOf(merchantId);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({
      id: outcome.providerChargeId,
      amount: 4_250,
      currency: 'usd',
      status: 'succeeded',
      description: 'Order 77',
      metadata: {
        order: '77',
        [STRIPE_METADATA_KEYS.providerKey]: local!.provider_key,
        [STRIPE_METADATA_KEYS.merchantId]: merchantId,
        [STRIPE_METADATA_KEYS.chargeId]: outcome.chargeId,
      },
    });
  });

  it('a replay answers the stored outcome; a create under the same key is deduped by Stripe', async () => {
    const merchantId = 'm_stripe_replay';
    const engine = engineOn(provider());
    const key = aKey();
    const first = await engine.processCharge(key, aRequest({ merchantId, customerId: 'tok_visa' }));
    const again = await engine.processCharge(key, aRequest({ merchantId, customerId: 'tok_visa' }));

    expect(again).toMatchObject({ replayed: true, body: first.body });
    // Stripe's own dedupe on the idempotency key, asked directly.
    const [local] = await readCharges(db.pool, db.tables, merchantId);
    const direct = await provider().createCharge(
      input(local!.provider_key, { customerId: 'tok_visa', merchantId, chargeId: local!.id }),
      { signal: signal() },
    );
    expect(direct.id).toBe(first.providerChargeId);
    expect(await chargesOf(merchantId)).toHaveLength(1);
  });

  it('a decline is an outcome with its decline code, replayed by the engine and by Stripe', async () => {
    const merchantId = 'm_stripe_decline';
    const engine = engineOn(provider());
    const key = aKey();
    const request = aRequest({ merchantId, customerId: 'tok_chargeDeclinedInsufficientFunds' });

    const outcome = await engine.processCharge(key, request);
    expect(outcome).toMatchObject({ status: 'declined', httpStatus: 402, replayed: false });
    expect(outcome.body).toContain('insufficient_funds');
    expect(await engine.processCharge(key, request)).toMatchObject({
      replayed: true,
      body: outcome.body,
    });

    const [local] = await readCharges(db.pool, db.tables, merchantId);
    const replayedByStripe = await provider().createCharge(
      input(local!.provider_key, {
        customerId: 'tok_chargeDeclinedInsufficientFunds',
        merchantId,
        chargeId: local!.id,
      }),
      { signal: signal() },
    );
    expect(replayedByStripe).toEqual({
      id: outcome.providerChargeId,
      status: 'declined',
      amountMinor: 2_000,
      currency: 'NGN',
      declineCode: 'insufficient_funds',
    });
    const charges = await chargesOf(merchantId);
    expect(charges).toEqual([expect.objectContaining({ status: 'failed' })]);
  });

  it('a lost response: the retry finds the charge and adopts it; one charge at Stripe', async () => {
    const merchantId = 'm_stripe_lost';
    const engine = engineOn(provider());
    const key = aKey();
    const request = aRequest({ merchantId, customerId: 'tok_visa' });
    // The SDK resends a POST once on a closed connection even with its retries off (under the
    // same idempotency key): drop that answer too, so the engine is the one that retries.
    planned.push({ fault: 'dropResponse' }, { fault: 'dropResponse' });

    const error = await rejection(engine.processCharge(key, request));
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as Error).cause).toMatchObject({ reason: 'connection' });
    expect(await chargesOf(merchantId)).toHaveLength(1); // Stripe charged; nobody heard

    const outcome = await engine.processCharge(key, request);
    const charges = await chargesOf(merchantId);
    expect(charges).toHaveLength(1);
    expect(outcome).toMatchObject({ status: 'succeeded', providerChargeId: charges[0]!.id });
    expect(proxy.counts.dropResponse).toBeGreaterThanOrEqual(1);
  });

  it('429 with Retry-After: transient, the engine passes the delay on; the retry charges once', async () => {
    const merchantId = 'm_stripe_429';
    const engine = engineOn(provider());
    const key = aKey();
    const request = aRequest({ merchantId, customerId: 'tok_visa' });
    planned.push({
      fault: 'respond',
      status: 429,
      headers: { 'retry-after': '2' },
      body: JSON.stringify({ error: { type: 'rate_limit_error', message: 'Too many requests' } }),
    });

    const error = await rejection(engine.processCharge(key, request));
    expect(error).toBeInstanceOf(ProviderUnavailableError);
    const cause = (error as ProviderUnavailableError).cause;
    expect(cause).toBeInstanceOf(ProviderTransientError);
    expect(cause).toMatchObject({ reason: 'http_429', retryAfterMs: 2_000 });
    expect((error as ProviderUnavailableError).retryAfterMs).toBe(2_000);

    const outcome = await engine.processCharge(key, request);
    expect(outcome.status).toBe('succeeded');
    expect(await chargesOf(merchantId)).toEqual([
      expect.objectContaining({ id: outcome.providerChargeId }),
    ]);
  });

  it('5xx before Stripe saw the request, and 5xx after it charged: each retried, one charge each', async () => {
    const merchantId = 'm_stripe_5xx';
    const engine = engineOn(provider());
    const apiError = JSON.stringify({ error: { type: 'api_error', message: 'boom' } });
    const before = aKey();
    const after = aKey();
    const request = (amountMinor: number) =>
      aRequest({ merchantId, customerId: 'tok_visa', amountMinor });

    planned.push({ fault: 'respond', status: 503, body: apiError });
    expect(await rejection(engine.processCharge(before, request(2_000)))).toMatchObject({
      cause: { reason: 'http_503' },
    });
    planned.push({ fault: 'replaceResponse', status: 500, body: apiError });
    expect(await rejection(engine.processCharge(after, request(3_000)))).toMatchObject({
      cause: { reason: 'http_500' },
    });
    expect(await chargesOf(merchantId)).toHaveLength(1); // only the second reached Stripe

    const retriedBefore = await engine.processCharge(before, request(2_000));
    const retriedAfter = await engine.processCharge(after, request(3_000));
    const charges = await chargesOf(merchantId);
    expect(charges.map((c) => c.id).sort()).toEqual(
      [retriedBefore.providerChargeId, retriedAfter.providerChargeId].sort(),
    );
  });

  it('409 idempotency_key_in_use and a connection reset are transient', async () => {
    planned.push({
      fault: 'respond',
      status: 409,
      body: JSON.stringify({
        error: { type: 'idempotency_error', code: 'idempotency_key_in_use', message: 'in use' },
      }),
    });
    expect(
      await rejection(provider().createCharge(input(aKey()), { signal: signal() })),
    ).toMatchObject({ name: 'ProviderTransientError', reason: 'idempotency_key_in_use' });

    // Reset twice: the SDK resends once on a closed connection, whatever its retry setting.
    planned.push({ fault: 'resetRequest' }, { fault: 'resetRequest' });
    expect(
      await rejection(provider().createCharge(input(aKey()), { signal: signal() })),
    ).toMatchObject({ name: 'ProviderTransientError', reason: 'connection' });
  });

  it('a refused API key is a ProviderError, loud, with the key released for a retry', async () => {
    const merchantId = 'm_stripe_auth';
    const key = aKey();
    const request = aRequest({ merchantId, customerId: 'tok_visa' });
    const wrongKey = createStripeProvider({ stripe: stripeClient(proxy.port, 'sk_live_oops') });

    const error = await rejection(engineOn(wrongKey).processCharge(key, request));
    expect(error).toBeInstanceOf(ProviderError);
    const cause = (error as ProviderError).cause;
    expect(cause).toBeInstanceOf(StripeAdapterError);
    expect(cause).toMatchObject({ kind: 'authentication' });
    expect(await chargesOf(merchantId)).toHaveLength(0);

    const outcome = await engineOn(provider()).processCharge(key, request);
    expect(outcome.status).toBe('succeeded');
    expect(await chargesOf(merchantId)).toHaveLength(1);
  });
});

describe('createStripeProvider, the adapter alone', () => {
  it('an idempotency key reused with other parameters: a loud StripeAdapterError, not transient', async () => {
    const stripeProvider = provider();
    const providerKey = aKey();
    await stripeProvider.createCharge(input(providerKey), { signal: signal() });

    const error = await rejection(
      stripeProvider.createCharge(input(providerKey, { amountMinor: 2_001 }), {
        signal: signal(),
      }),
    );
    expect(error).toBeInstanceOf(StripeAdapterError);
    expect(error).not.toBeInstanceOf(ProviderTransientError);
    expect(error).toMatchObject({ kind: 'idempotency_mismatch' });
    expect((error as Error).message).toContain('bug in the caller');
  });

  it('declares Stripe’s 24 h window; a search-only lookup says it is not authoritative', () => {
    expect(provider()).toMatchObject({
      idempotencyWindowMs: 24 * 3_600_000,
      lookupIsAuthoritative: true,
    });
    expect(provider({ lookup: 'list' }).lookupIsAuthoritative).toBe(true);
    expect(provider({ lookup: 'search' }).lookupIsAuthoritative).toBe(false);
  });

  it('findCharge without the Search API (the emulator answers 404) lists, bounded by the reservation', async () => {
    const stripeProvider = provider({ clockSkewMs: 0 });
    const providerKey = aKey();
    const made = await stripeProvider.createCharge(input(providerKey), { signal: signal() });

    const reservedBefore = new Date(Date.now() - 5_000);
    expect(
      await stripeProvider.findCharge(providerKey, {
        signal: signal(),
        reservedAt: reservedBefore,
      }),
    ).toEqual(made);
    // A reservation made after the charge: the charge cannot be this key's, and is not found.
    const reservedAfter = new Date(Date.now() + 2_000);
    expect(
      await stripeProvider.findCharge(providerKey, { signal: signal(), reservedAt: reservedAfter }),
    ).toBeNull();
    expect(
      await stripeProvider.findCharge(aKey(), { signal: signal(), reservedAt: reservedBefore }),
    ).toBeNull();
  });

  it('findCharge pages through the listing, and refuses to say "not found" past maxListPages', async () => {
    const stripeProvider = provider();
    const reservedAt = new Date(Date.now() - 1_000);
    const target = aKey();
    await stripeProvider.createCharge(input(target), { signal: signal() });
    // 150 newer charges: the target is on the second page (or later: other tests' charges).
    for (let i = 0; i < 150; i++) {
      await stripeProvider.createCharge(input(aKey()), { signal: signal() });
    }

    expect(await stripeProvider.findCharge(target, { signal: signal(), reservedAt })).toMatchObject(
      { status: 'succeeded' },
    );
    const short = provider({ maxListPages: 1 });
    const error = await rejection(short.findCharge(aKey(), { signal: signal(), reservedAt }));
    expect(error).toBeInstanceOf(StripeAdapterError);
    expect(error).toMatchObject({ kind: 'lookup_incomplete' });
  });

  it('a search-only lookup on an account without search fails loudly', async () => {
    const error = await rejection(
      provider({ lookup: 'search' }).findCharge(aKey(), {
        signal: signal(),
        reservedAt: new Date(),
      }),
    );
    expect(error).toMatchObject({ name: 'StripeAdapterError', kind: 'search_unavailable' });
  });

  it('honours the signal: a hung request is a transient timeout when it aborts', async () => {
    planned.push({ fault: 'hang' });
    const started = performance.now();
    const error = await rejection(
      provider({ requestTimeoutMs: 5_000 }).createCharge(input(aKey()), {
        signal: AbortSignal.timeout(200),
      }),
    );
    expect(error).toMatchObject({ name: 'ProviderTransientError', reason: 'timeout' });
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('the sweeper on Stripe', () => {
  let sweepDb: TestDatabase;
  beforeAll(async () => {
    sweepDb = await createTestDatabase();
  });
  afterAll(async () => {
    await sweepDb?.drop();
  });

  it('adopts the charge of an attempt that died after Stripe charged, cancels one that died before', async () => {
    const merchantId = 'm_stripe_sweep';
    const charged = aKey();
    const notCharged = aKey();
    const stripeProvider = provider();
    const options = {
      pool: sweepDb.pool,
      provider: stripeProvider,
      leaseMs: 1_500,
      providerTimeoutMs: 500,
      leaseMarginMs: 200,
    };
    const crashing = createChargeEngine({
      ...options,
      faults: {
        shouldCrash: (point, ctx) =>
          (ctx.key === charged && point === 'afterProviderCall') ||
          (ctx.key === notCharged && point === 'beforeProviderCall'),
      },
    });
    const request = aRequest({ merchantId, customerId: 'tok_visa' });
    await expect(crashing.processCharge(charged, request)).rejects.toThrow();
    await expect(crashing.processCharge(notCharged, request)).rejects.toThrow();
    const keys = new Set(
      (await readCharges(sweepDb.pool, sweepDb.tables, merchantId)).map((c) => c.provider_key),
    );
    const ours = async () =>
      (await emulatorCharges()).filter((c) =>
        keys.has(c.metadata[STRIPE_METADATA_KEYS.providerKey] ?? ''),
      );
    expect(await ours()).toHaveLength(1);

    await new Promise((resolve) => setTimeout(resolve, 1_700)); // the leases run out
    const sweeper = createChargeEngine({ ...options, sweepGraceMs: 0, onAbandoned: 'cancel' });
    const result = await sweeper.sweep({ limit: 10 });

    expect(result).toMatchObject({ examined: 2, adopted: 1, cancelled: 1 });
    const [stripeCharge] = await ours();
    expect(await ours()).toHaveLength(1);
    const adopted = await sweeper.processCharge(charged, request);
    expect(adopted).toMatchObject({
      status: 'succeeded',
      replayed: true,
      providerChargeId: stripeCharge!.id,
    });
    expect(await sweeper.processCharge(notCharged, request)).toMatchObject({
      status: 'cancelled',
      replayed: true,
    });
    expect(await readKey(sweepDb.pool, sweepDb.tables, merchantId, notCharged)).toMatchObject({
      recovery_point: 'completed',
    });
  });
});
