import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  ProviderTransientError,
  ProviderUnavailableError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
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
  type StripeProvider,
  type StripeProviderOptions,
} from '../../src/stripe/index.js';
import { aKey, aRequest } from '../support/charges.js';
import {
  startHttpFaultProxy,
  type FaultChoice,
  type HttpFaultProxy,
} from '../support/httpFaultProxy.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

/*
 * Refunds and captures of the Stripe adapter through the official SDK against
 * stripe-stateful-mock (a third-party Stripe emulator), with a fault proxy between the two. The
 * emulator keeps its objects for the whole process: each test tells its own apart by id or key.
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

function stripeClient(port: number): Stripe {
  return new Stripe(EMULATOR_SECRET_KEY, {
    host: '127.0.0.1',
    port,
    protocol: 'http',
    telemetry: false,
  });
}

/** The adapter, talking to the emulator through the fault proxy. */
function provider(options: Partial<StripeProviderOptions> = {}): StripeProvider {
  return createStripeProvider({ stripe: stripeClient(proxy.port), ...options });
}

/** Stripe's records, read past the proxy. */
const direct = () => stripeClient(emulator.port);

const signal = () => AbortSignal.timeout(5_000);
const found = (reservedAt = new Date(Date.now() - 5_000)) => ({ signal: signal(), reservedAt });

function chargeInput(overrides: Partial<CreateChargeInput> = {}): CreateChargeInput {
  return {
    providerKey: aKey(),
    merchantId: 'm_stripe_moves',
    chargeId: randomUUID(),
    customerId: 'tok_visa',
    amountMinor: 10_000,
    currency: 'USD',
    ...overrides,
  };
}

function refundOf(
  providerChargeId: string,
  amountMinor: number,
  overrides: Partial<CreateRefundInput> = {},
): CreateRefundInput {
  return {
    providerKey: aKey(),
    merchantId: 'm_stripe_moves',
    refundId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'USD',
    ...overrides,
  };
}

function captureOf(providerChargeId: string, amountMinor: number): CaptureInput {
  return {
    providerKey: aKey(),
    merchantId: 'm_stripe_moves',
    captureId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'USD',
  };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('Stripe authorizations and captures', () => {
  it('capture: false authorizes only; nothing to find until the capture', async () => {
    const stripe = provider();
    const authorized = await stripe.createCharge(chargeInput({ capture: false }), {
      signal: signal(),
    });

    expect(authorized).toMatchObject({ status: 'succeeded', amountMinor: 10_000 });
    expect(await direct().charges.retrieve(authorized.id)).toMatchObject({
      captured: false,
      amount_captured: 0,
    });
    const lookup = { providerKey: aKey(), providerChargeId: authorized.id };
    expect(await stripe.findCapture(lookup, found())).toBeNull();
    // A charge made without `capture` is captured at once, as before.
    const atOnce = await stripe.createCharge(chargeInput(), { signal: signal() });
    expect(await direct().charges.retrieve(atOnce.id)).toMatchObject({ captured: true });
  });

  it('captures part once: the key dedupes, findCapture finds it, another key is refused loudly', async () => {
    const stripe = provider();
    const authorized = await stripe.createCharge(chargeInput({ capture: false }), {
      signal: signal(),
    });
    const input = captureOf(authorized.id, 6_000);

    const captured = await stripe.capture(input, { signal: signal() });
    expect(captured).toEqual({
      id: authorized.id,
      status: 'succeeded',
      amountMinor: 6_000,
      currency: 'USD',
    });
    expect(await stripe.capture(input, { signal: signal() })).toEqual(captured);
    expect(
      await stripe.findCapture(
        { providerKey: input.providerKey, providerChargeId: authorized.id },
        found(),
      ),
    ).toEqual(captured);

    const again = await rejection(
      stripe.capture(captureOf(authorized.id, 1_000), { signal: signal() }),
    );
    expect(again).toBeInstanceOf(StripeAdapterError);
    expect(again).not.toBeInstanceOf(ProviderTransientError);
    expect(again).toMatchObject({
      kind: 'invalid_request',
      cause: { code: 'charge_already_captured' },
    });
    expect(await direct().charges.retrieve(authorized.id)).toMatchObject({
      amount_captured: 6_000,
    });
  });

  it('a capture whose answer was lost is transient, found, and replayed by Stripe', async () => {
    const stripe = provider();
    const authorized = await stripe.createCharge(chargeInput({ capture: false }), {
      signal: signal(),
    });
    const input = captureOf(authorized.id, 10_000);
    // The SDK resends a POST once on a closed connection: drop both answers.
    planned.push({ fault: 'dropResponse' }, { fault: 'dropResponse' });

    const lost = await rejection(stripe.capture(input, { signal: signal() }));
    expect(lost).toMatchObject({ name: 'ProviderTransientError', reason: 'connection' });
    const lookup = { providerKey: input.providerKey, providerChargeId: authorized.id };
    expect(await stripe.findCapture(lookup, found())).toMatchObject({ amountMinor: 10_000 });
    expect(await stripe.capture(input, { signal: signal() })).toMatchObject({
      id: authorized.id,
      amountMinor: 10_000,
    });
  });
});

describe('Stripe refunds', () => {
  it('refunds with chargeonce metadata; Stripe dedupes the key; findRefund lists and matches', async () => {
    const stripe = provider({ clockSkewMs: 0 });
    const reservedAt = new Date(Date.now() - 2_000);
    const charge = await stripe.createCharge(chargeInput(), { signal: signal() });
    const input = refundOf(charge.id, 2_500, { reason: 'requested_by_customer' });

    const refund = await stripe.createRefund(input, { signal: signal() });
    expect(refund).toEqual({
      id: expect.stringMatching(/^re_/) as unknown,
      status: 'succeeded',
      amountMinor: 2_500,
      currency: 'USD',
    });
    expect(await stripe.createRefund(input, { signal: signal() })).toEqual(refund);
    expect(await direct().refunds.retrieve(refund.id)).toMatchObject({
      charge: charge.id,
      amount: 2_500,
      reason: 'requested_by_customer',
      metadata: {
        [STRIPE_METADATA_KEYS.providerKey]: input.providerKey,
        [STRIPE_METADATA_KEYS.merchantId]: 'm_stripe_moves',
        [STRIPE_METADATA_KEYS.chargeId]: input.chargeId,
        [STRIPE_METADATA_KEYS.refundId]: input.refundId,
        [STRIPE_METADATA_KEYS.reason]: 'requested_by_customer',
      },
    });
    const refunds = await direct().refunds.list({ charge: charge.id, limit: 100 });
    expect(refunds.data).toHaveLength(1);

    expect(await stripe.findRefund(input.providerKey, found(reservedAt))).toEqual(refund);
    expect(await stripe.findRefund(aKey(), found(reservedAt))).toBeNull();
    // A reservation made after the refund: it cannot be this key's, and is not found.
    expect(
      await stripe.findRefund(input.providerKey, found(new Date(Date.now() + 2_000))),
    ).toBeNull();
  });

  it('a free-text reason goes in metadata only; Stripe takes its own three', async () => {
    const stripe = provider();
    const charge = await stripe.createCharge(chargeInput(), { signal: signal() });
    const input = refundOf(charge.id, 100, { reason: 'parcel lost in transit' });

    const refund = await stripe.createRefund(input, { signal: signal() });

    expect(await direct().refunds.retrieve(refund.id)).toMatchObject({
      reason: null,
      metadata: { [STRIPE_METADATA_KEYS.reason]: 'parcel lost in transit' },
    });
  });

  it('refunds within the capture of an authorization; past it, Stripe refuses loudly', async () => {
    const stripe = provider();
    const authorized = await stripe.createCharge(
      chargeInput({ amountMinor: 10_000, capture: false }),
      { signal: signal() },
    );
    // Stripe refuses a partial refund of an uncaptured charge.
    expect(
      await rejection(stripe.createRefund(refundOf(authorized.id, 100), { signal: signal() })),
    ).toMatchObject({ name: 'StripeAdapterError', kind: 'invalid_request' });
    await stripe.capture(captureOf(authorized.id, 6_000), { signal: signal() });

    expect(
      await stripe.createRefund(refundOf(authorized.id, 6_000), { signal: signal() }),
    ).toMatchObject({ status: 'succeeded', amountMinor: 6_000 });
    const over = await rejection(
      stripe.createRefund(refundOf(authorized.id, 1), { signal: signal() }),
    );
    expect(over).toBeInstanceOf(StripeAdapterError);
    expect(over).not.toBeInstanceOf(ProviderTransientError);
    const charge = await direct().charges.retrieve(authorized.id);
    // The emulator records the released remainder of a partial capture as a refund, too.
    expect(charge).toMatchObject({ amount_captured: 6_000, amount_refunded: 10_000 });
  });

  it('a lost refund answer and a 503: transient; the lookup and Stripe’s dedupe prevent a second refund', async () => {
    const stripe = provider();
    const charge = await stripe.createCharge(chargeInput(), { signal: signal() });
    const lost = refundOf(charge.id, 1_000);
    const unavailable = refundOf(charge.id, 2_000);
    planned.push({ fault: 'dropResponse' }, { fault: 'dropResponse' });
    expect(await rejection(stripe.createRefund(lost, { signal: signal() }))).toMatchObject({
      name: 'ProviderTransientError',
      reason: 'connection',
    });
    planned.push({
      fault: 'respond',
      status: 503,
      body: JSON.stringify({ error: { type: 'api_error', message: 'unavailable' } }),
    });
    expect(await rejection(stripe.createRefund(unavailable, { signal: signal() }))).toMatchObject({
      name: 'ProviderTransientError',
      reason: 'http_503',
    });

    const foundLost = await stripe.findRefund(lost.providerKey, found());
    expect(foundLost).toMatchObject({ status: 'succeeded', amountMinor: 1_000 });
    expect(await stripe.findRefund(unavailable.providerKey, found())).toBeNull();
    expect(await stripe.createRefund(lost, { signal: signal() })).toEqual(foundLost);
    await stripe.createRefund(unavailable, { signal: signal() });
    const refunds = await direct().refunds.list({ charge: charge.id, limit: 100 });
    expect(refunds.data.map((r) => r.amount).sort()).toEqual([1_000, 2_000]);
  });

  it('findRefund pages through the listing, and refuses to say "not found" past maxListPages', async () => {
    const stripe = provider();
    const reservedAt = new Date(Date.now() - 1_000);
    const charge = await stripe.createCharge(chargeInput({ amountMinor: 100_000 }), {
      signal: signal(),
    });
    const target = refundOf(charge.id, 1);
    await stripe.createRefund(target, { signal: signal() });
    // 150 newer refunds: the target is on the second page (or later: other tests' refunds).
    for (let i = 0; i < 150; i++) {
      await stripe.createRefund(refundOf(charge.id, 1), { signal: signal() });
    }

    expect(await stripe.findRefund(target.providerKey, found(reservedAt))).toMatchObject({
      status: 'succeeded',
      amountMinor: 1,
    });
    const error = await rejection(
      provider({ maxListPages: 1 }).findRefund(aKey(), found(reservedAt)),
    );
    expect(error).toMatchObject({ name: 'StripeAdapterError', kind: 'lookup_incomplete' });
  });

  it('honours the signal: a hung refund is a transient timeout when it aborts', async () => {
    const stripe = provider({ requestTimeoutMs: 5_000 });
    const charge = await stripe.createCharge(chargeInput(), { signal: signal() });
    planned.push({ fault: 'hang' });

    const error = await rejection(
      stripe.createRefund(refundOf(charge.id, 1), { signal: AbortSignal.timeout(200) }),
    );
    expect(error).toMatchObject({ name: 'ProviderTransientError', reason: 'timeout' });
  });
});

describe('the engine on Stripe: authorize, capture, refund', () => {
  it('captures and refunds once per key, adopting a refund whose answer was lost', async () => {
    const merchantId = 'm_stripe_engine_moves';
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: provider(),
      leaseMs: 10_000,
      providerTimeoutMs: 3_000,
    });
    const authorized = await engine.processCharge(
      aKey(),
      aRequest({
        merchantId,
        customerId: 'tok_visa',
        amountMinor: 10_000,
        currency: 'USD',
        capture: false,
      }),
    );
    expect(authorized.status).toBe('succeeded');

    const captureKey = aKey();
    const captured = await engine.processCapture(captureKey, {
      merchantId,
      chargeId: authorized.chargeId,
      amountMinor: 8_000,
    });
    expect(captured).toMatchObject({
      status: 'succeeded',
      providerCaptureId: authorized.providerChargeId,
    });

    const refundKey = aKey();
    const request = { merchantId, chargeId: authorized.chargeId, amountMinor: 3_000 };
    planned.push({ fault: 'dropResponse' }, { fault: 'dropResponse' });
    const lost = await rejection(engine.processRefund(refundKey, request));
    expect(lost).toBeInstanceOf(ProviderUnavailableError);
    const refunded = await engine.processRefund(refundKey, request);
    expect(refunded).toMatchObject({ status: 'succeeded', replayed: false });
    expect(await engine.processRefund(refundKey, request)).toEqual({
      ...refunded,
      replayed: true,
    });

    const charge = await direct().charges.retrieve(authorized.providerChargeId!);
    expect(charge).toMatchObject({ captured: true, amount_captured: 8_000 });
    const refunds = await direct().refunds.list({ charge: charge.id, limit: 100 });
    const ours = refunds.data.filter((r) => r.metadata?.[STRIPE_METADATA_KEYS.merchantId]);
    expect(ours).toEqual([
      expect.objectContaining({ id: refunded.providerRefundId, amount: 3_000 }),
    ]);
    expect(
      await engine.processCapture(captureKey, {
        merchantId,
        chargeId: authorized.chargeId,
        amountMinor: 8_000,
      }),
    ).toEqual({ ...captured, replayed: true });
  });
});
