import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createHttpProvider,
  ProviderHttpError,
  startFakeProviderServer,
  type FakeProviderServer,
  type FakeProviderServerOptions,
  type HttpProvider,
} from '../../src/testing/index.js';
import {
  ProviderTransientError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
} from '../../src/index.js';

/*
 * Refunds and captures on the fake provider server, through the HTTP adapter: the provider's
 * rules, its dedupe and lookups, every fault, outages, and its ledgers and stats.
 */

const servers: FakeProviderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(
  options: FakeProviderServerOptions = {},
): Promise<{ server: FakeProviderServer; provider: HttpProvider }> {
  const server = await startFakeProviderServer(options);
  servers.push(server);
  return { server, provider: createHttpProvider({ baseUrl: server.url }) };
}

const forever = () => ({ signal: new AbortController().signal });
const found = () => ({ signal: new AbortController().signal, reservedAt: new Date() });
const aKey = (what: string) => `co_${what}_${randomUUID()}`;

function chargeInput(overrides: Partial<CreateChargeInput> = {}): CreateChargeInput {
  return {
    providerKey: aKey('charge'),
    merchantId: 'm_server',
    chargeId: randomUUID(),
    customerId: 'c_1',
    amountMinor: 1_000,
    currency: 'NGN',
    ...overrides,
  };
}

function refundOf(
  providerChargeId: string,
  amountMinor: number,
  overrides: Partial<CreateRefundInput> = {},
): CreateRefundInput {
  return {
    providerKey: aKey('refund'),
    merchantId: 'm_server',
    refundId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'NGN',
    ...overrides,
  };
}

function captureOf(providerChargeId: string, amountMinor: number): CaptureInput {
  return {
    providerKey: aKey('capture'),
    merchantId: 'm_server',
    captureId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'NGN',
  };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('refunds on the fake provider server', () => {
  it('refunds in parts up to the capture; past it, failed with amount_too_large', async () => {
    const { server, provider } = await start();
    const charge = await provider.createCharge(chargeInput({ amountMinor: 1_000 }), forever());

    const first = await provider.createRefund(
      refundOf(charge.id, 600, { reason: 'duplicate' }),
      forever(),
    );
    const over = await provider.createRefund(refundOf(charge.id, 401), forever());
    const rest = await provider.createRefund(refundOf(charge.id, 400), forever());

    expect(first).toEqual({
      id: expect.stringMatching(/^re_/) as unknown,
      status: 'succeeded',
      amountMinor: 600,
      currency: 'NGN',
    });
    expect(over).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
    expect(rest).toMatchObject({ status: 'succeeded', amountMinor: 400 });
    expect(server.refundLedger()).toEqual([
      expect.objectContaining({ id: first.id, providerChargeId: charge.id, reason: 'duplicate' }),
      expect.objectContaining({ id: over.id, status: 'failed' }),
      expect.objectContaining({ id: rest.id }),
    ]);
    expect(server.stats()).toMatchObject({ refunds: 3, refundReplays: 0, charges: 1 });
  });

  it('dedupes within the window, refuses the key with another body, finds after the window', async () => {
    let now = 1_700_000_000_000;
    const { server, provider } = await start({ idempotencyWindowMs: 60_000, now: () => now });
    const charge = await provider.createCharge(chargeInput(), forever());
    const input = refundOf(charge.id, 100);

    const first = await provider.createRefund(input, forever());
    expect(await provider.createRefund(input, forever())).toEqual(first);
    const reused = await failure(provider.createRefund({ ...input, amountMinor: 101 }, forever()));
    expect(reused).toBeInstanceOf(ProviderHttpError);
    expect(reused).not.toBeInstanceOf(ProviderTransientError);
    expect((reused as ProviderHttpError).body).toContain('idempotency_error');

    now += 60_000;
    expect(await provider.findRefund(input.providerKey, found())).toEqual(first);
    expect(await provider.findRefund(aKey('never'), found())).toBeNull();
    // Past the window the key refunds again: the lookup is what prevents it.
    await provider.createRefund(input, forever());
    expect(server.refundLedger().filter((r) => r.providerKey === input.providerKey)).toHaveLength(
      2,
    );
    expect(server.stats()).toMatchObject({ refunds: 2, refundReplays: 1 });
  });

  it('every fault on a refund: before, after, reset, 429, hang, decline, wrong amount, malformed', async () => {
    const { server, provider } = await start({ refundFailureCode: 'card_gone' });
    const charge = await provider.createCharge(chargeInput({ amountMinor: 10_000 }), forever());
    const reason = async (promise: Promise<unknown>) =>
      ((await failure(promise)) as ProviderTransientError).reason;
    server.failNextRefund(
      'errorBeforeCharge',
      'errorAfterCharge',
      'resetAfterCharge',
      'tooManyRequests',
      'hang',
      'decline',
      'wrongAmount',
      'malformed',
    );

    const before = refundOf(charge.id, 100);
    expect(await reason(provider.createRefund(before, forever()))).toBe('http_5xx');
    expect(await provider.findRefund(before.providerKey, found())).toBeNull();
    const after = refundOf(charge.id, 100);
    expect(await reason(provider.createRefund(after, forever()))).toBe('http_5xx');
    expect(await provider.findRefund(after.providerKey, found())).toMatchObject({
      status: 'succeeded',
    });
    const reset = refundOf(charge.id, 100);
    expect(await reason(provider.createRefund(reset, forever()))).toBe('reset');
    expect(await provider.findRefund(reset.providerKey, found())).toMatchObject({
      status: 'succeeded',
    });
    expect(await reason(provider.createRefund(refundOf(charge.id, 100), forever()))).toBe(
      'http_429',
    );
    expect(
      await reason(
        provider.createRefund(refundOf(charge.id, 100), { signal: AbortSignal.timeout(100) }),
      ),
    ).toBe('timeout');
    const declined = refundOf(charge.id, 100);
    expect(await provider.createRefund(declined, forever())).toMatchObject({
      status: 'failed',
      failureCode: 'card_gone',
    });
    expect(await provider.createRefund(refundOf(charge.id, 100), forever())).toMatchObject({
      status: 'succeeded',
      amountMinor: 99,
    });
    const malformed = await failure(provider.createRefund(refundOf(charge.id, 100), forever()));
    expect(malformed).toBeInstanceOf(ProviderHttpError);

    // The lost ones are replayed on retry, the refused one stays refused; nothing doubles.
    expect(await provider.createRefund(after, forever())).toMatchObject({ status: 'succeeded' });
    expect(await provider.createRefund(declined, forever())).toMatchObject({ status: 'failed' });
    expect(server.refundLedger()).toHaveLength(5);
    expect(server.stats().faults).toMatchObject({
      errorBeforeCharge: 1,
      errorAfterCharge: 1,
      resetAfterCharge: 1,
      tooManyRequests: 1,
      hang: 1,
      decline: 1,
      wrongAmount: 1,
      malformed: 1,
    });
    // Charges have a queue of their own: the refund faults left none for them.
    expect((await provider.createCharge(chargeInput(), forever())).status).toBe('succeeded');
  });

  it('an unknown charge is a 404, another currency a 400: errors, not transient, nothing recorded', async () => {
    const { server, provider } = await start();
    const charge = await provider.createCharge(chargeInput(), forever());

    const unknown = await failure(provider.createRefund(refundOf('ch_nope', 1), forever()));
    expect(unknown).toMatchObject({ name: 'ProviderHttpError', status: 404 });
    const currency = await failure(
      provider.createRefund(refundOf(charge.id, 1, { currency: 'USD' }), forever()),
    );
    expect(currency).toMatchObject({ name: 'ProviderHttpError', status: 400 });
    expect(server.refundLedger()).toEqual([]);
    expect(server.stats().requests.invalid).toBe(2);
  });
});

describe('authorizations and captures on the fake provider server', () => {
  it('authorizes with capture: false, captures part, refunds within the capture', async () => {
    const { server, provider } = await start();
    const authorized = await provider.createCharge(
      chargeInput({ amountMinor: 1_000, capture: false }),
      forever(),
    );
    expect(authorized).toMatchObject({ status: 'succeeded', amountMinor: 1_000 });
    expect(server.ledger()[0]).toMatchObject({ capture: false });
    expect(await provider.createRefund(refundOf(authorized.id, 1), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'amount_too_large',
    });

    const input = captureOf(authorized.id, 600);
    const captured = await provider.capture(input, forever());
    expect(captured).toEqual({
      id: expect.stringMatching(/^cap_/) as unknown,
      status: 'succeeded',
      amountMinor: 600,
      currency: 'NGN',
    });
    expect(await provider.capture(input, forever())).toEqual(captured);
    expect(await provider.createRefund(refundOf(authorized.id, 601), forever())).toMatchObject({
      status: 'failed',
    });
    expect(await provider.createRefund(refundOf(authorized.id, 600), forever())).toMatchObject({
      status: 'succeeded',
    });

    server.forgetIdempotencyKeys();
    const lookup = { providerKey: input.providerKey, providerChargeId: authorized.id };
    expect(await provider.findCapture(lookup, found())).toEqual(captured);
    expect(await provider.findCapture({ ...lookup, providerChargeId: 'ch_other' }, found())).toBe(
      null,
    );
    expect(server.stats()).toMatchObject({ captures: 1, captureReplays: 1 });
  });

  it('captures once: another key, a charge captured at creation, too much, a decline: failed', async () => {
    const { server, provider } = await start();
    const authorized = await provider.createCharge(
      chargeInput({ amountMinor: 1_000, capture: false }),
      forever(),
    );
    const atOnce = await provider.createCharge(chargeInput(), forever());
    server.failNext('decline');
    const declined = await provider.createCharge(chargeInput({ capture: false }), forever());

    expect(await provider.capture(captureOf(authorized.id, 1_001), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'amount_too_large',
    });
    expect(await provider.capture(captureOf(authorized.id, 1_000), forever())).toMatchObject({
      status: 'succeeded',
    });
    expect(await provider.capture(captureOf(authorized.id, 1), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'already_captured',
    });
    expect(await provider.capture(captureOf(atOnce.id, 1), forever())).toMatchObject({
      failureCode: 'already_captured',
    });
    expect(await provider.capture(captureOf(declined.id, 1), forever())).toMatchObject({
      failureCode: 'charge_declined',
    });
    expect(server.captureLedger().filter((c) => c.status === 'succeeded')).toHaveLength(1);
  });

  it('capture faults, from their own queue, and the same key on another charge', async () => {
    const { server, provider } = await start({ captureFailureCode: 'expired' });
    const one = await provider.createCharge(chargeInput({ capture: false }), forever());
    const two = await provider.createCharge(chargeInput({ capture: false }), forever());
    server.failNextCapture('resetAfterCharge');

    const lost = captureOf(one.id, 1_000);
    const error = await failure(provider.capture(lost, forever()));
    expect(error).toMatchObject({ name: 'ProviderTransientError', reason: 'reset' });
    expect(await provider.capture(lost, forever())).toMatchObject({ status: 'succeeded' });
    server.failNextCapture('decline');
    expect(await provider.capture(captureOf(two.id, 1_000), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'expired',
    });
    const otherCharge = await failure(
      provider.capture({ ...lost, providerChargeId: two.id }, forever()),
    );
    expect((otherCharge as ProviderHttpError).body).toContain('idempotency_error');
    expect(server.stats()).toMatchObject({ captures: 2, captureReplays: 1 });
  });

  it('an outage refuses refunds, captures and their lookups, before doing anything', async () => {
    const { server, provider } = await start();
    const charge = await provider.createCharge(chargeInput({ capture: false }), forever());
    server.startOutage(60_000);

    for (const call of [
      () => provider.capture(captureOf(charge.id, 1), forever()),
      () => provider.findCapture({ providerKey: aKey('x'), providerChargeId: charge.id }, found()),
      () => provider.createRefund(refundOf(charge.id, 1), forever()),
      () => provider.findRefund(aKey('x'), found()),
    ]) {
      expect(await failure(call())).toMatchObject({ reason: 'http_5xx' });
    }
    expect(server.captureLedger()).toEqual([]);
    expect(server.refundLedger()).toEqual([]);
    expect(server.stats()).toMatchObject({
      outageRefusals: 4,
      requests: { capture: 1, findCapture: 1, createRefund: 1, findRefund: 1 },
    });
  });

  it('rates apply to refunds and captures too; lookups get only the faults that fit them', async () => {
    const { server, provider } = await start({ seed: 7 });
    const authorized = await provider.createCharge(
      chargeInput({ amountMinor: 1_000, capture: false }),
      forever(),
    );
    server.setRates({ decline: 1 });

    expect(await provider.capture(captureOf(authorized.id, 999), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'charge_expired_for_capture',
    });
    expect(await provider.createRefund(refundOf(authorized.id, 1), forever())).toMatchObject({
      status: 'failed',
      failureCode: 'expired_or_canceled_card',
    });
    const lookup = await provider.findRefund(aKey('x'), found());
    expect(lookup).toBeNull();
  });

  it('serves the refund and capture ledgers over HTTP, as it holds them', async () => {
    const { server, provider } = await start();
    const charge = await provider.createCharge(chargeInput({ capture: false }), forever());
    await provider.capture(captureOf(charge.id, 500), forever());
    await provider.createRefund(refundOf(charge.id, 200), forever());

    const movements = await (await fetch(`${server.url}/v1/ledger/movements`)).json();
    const stats = await (await fetch(`${server.url}/v1/stats`)).json();

    expect(movements).toEqual({ refunds: server.refundLedger(), captures: server.captureLedger() });
    expect(server.captureLedger()).toEqual([
      expect.objectContaining({ providerChargeId: charge.id, amountMinor: 500 }),
    ]);
    expect(server.refundLedger()).toEqual([
      expect.objectContaining({ providerChargeId: charge.id, amountMinor: 200 }),
    ]);
    expect(stats).toEqual(server.stats());
    expect(server.stats()).toMatchObject({
      requests: { movementLedger: 1, capture: 1, createRefund: 1 },
      refunds: 1,
      captures: 1,
    });
    const noKey = await fetch(`${server.url}/v1/refunds`, {
      method: 'POST',
      body: JSON.stringify({ chargeId: charge.id, amountMinor: 1, currency: 'NGN' }),
    });
    expect(noKey.status).toBe(400);
    const badBody = await fetch(`${server.url}/v1/charges/${charge.id}/capture`, {
      method: 'POST',
      headers: { 'idempotency-key': aKey('bad') },
      body: JSON.stringify({ amountMinor: -1, currency: 'NGN' }),
    });
    expect(badBody.status).toBe(400);
    expect(server.refundLedger()).toHaveLength(1);
  });
});
