import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ProviderTransientError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
} from '../../src/index.js';
import { createFakeProvider, type FakeProvider } from '../../src/testing/index.js';

/*
 * The in-memory fake's refunds and captures: the rules a real provider holds (never refund past
 * the capture, capture at most the authorization, once), its dedupe and lookups, and its faults.
 */

const opts = () => ({ signal: AbortSignal.timeout(5_000) });
const found = () => ({ signal: AbortSignal.timeout(5_000), reservedAt: new Date() });
const aKey = (what: string) => `co_${what}_${randomUUID()}`;

function chargeInput(overrides: Partial<CreateChargeInput> = {}): CreateChargeInput {
  return {
    providerKey: aKey('charge'),
    merchantId: 'm_fake',
    chargeId: randomUUID(),
    customerId: 'c_1',
    amountMinor: 1_000,
    currency: 'NGN',
    ...overrides,
  };
}

async function aCharge(provider: FakeProvider, overrides: Partial<CreateChargeInput> = {}) {
  return provider.createCharge(chargeInput(overrides), opts());
}

function refundOf(
  providerChargeId: string,
  amountMinor: number,
  overrides: Partial<CreateRefundInput> = {},
): CreateRefundInput {
  return {
    providerKey: aKey('refund'),
    merchantId: 'm_fake',
    refundId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'NGN',
    ...overrides,
  };
}

function captureOf(
  providerChargeId: string,
  amountMinor: number,
  overrides: Partial<CaptureInput> = {},
): CaptureInput {
  return {
    providerKey: aKey('capture'),
    merchantId: 'm_fake',
    captureId: randomUUID(),
    chargeId: randomUUID(),
    providerChargeId,
    amountMinor,
    currency: 'NGN',
    ...overrides,
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

describe('the fake provider: refunds', () => {
  it('refunds in parts up to the capture, refuses past it, and records both', async () => {
    const provider = createFakeProvider();
    const charge = await aCharge(provider, { amountMinor: 1_000 });

    const first = await provider.createRefund(refundOf(charge.id, 600), opts());
    const over = await provider.createRefund(refundOf(charge.id, 401), opts());
    const rest = await provider.createRefund(refundOf(charge.id, 400), opts());
    const more = await provider.createRefund(refundOf(charge.id, 1), opts());

    expect(first).toEqual({
      id: expect.stringMatching(/^pre_/) as unknown,
      status: 'succeeded',
      amountMinor: 600,
      currency: 'NGN',
    });
    expect(over).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
    expect(rest).toMatchObject({ status: 'succeeded', amountMinor: 400 });
    expect(more).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
    const succeeded = provider.refundLedger().filter((r) => r.status === 'succeeded');
    expect(succeeded.reduce((sum, r) => sum + r.amountMinor, 0)).toBe(1_000);
    expect(provider.refundLedger()).toHaveLength(4);
    expect(provider.calls.createRefund).toBe(4);
  });

  it('dedupes on the key, and finds the refund after the keys are forgotten', async () => {
    const provider = createFakeProvider();
    const charge = await aCharge(provider);
    const input = refundOf(charge.id, 300, { reason: 'requested_by_customer' });

    const first = await provider.createRefund(input, opts());
    const again = await provider.createRefund(input, opts());
    expect(again).toEqual(first);
    expect(provider.refundsFor(input.providerKey)).toBe(1);
    expect(provider.refundLedger()[0]).toMatchObject({
      providerKey: input.providerKey,
      providerChargeId: charge.id,
      reason: 'requested_by_customer',
    });

    provider.forgetIdempotencyKeys();
    expect(await provider.findRefund(input.providerKey, found())).toEqual(first);
    expect(await provider.findRefund(aKey('never'), found())).toBeNull();
    // Past the window the same key refunds again: only the lookup stops a double refund.
    await provider.createRefund(input, opts());
    expect(provider.refundsFor(input.providerKey)).toBe(2);
    expect(await provider.findRefund(input.providerKey, found())).toEqual(first);
  });

  it('failBeforeRefund, failAfterRefund, failRefund: nothing, a lost answer, a refusal', async () => {
    const provider = createFakeProvider({ refundFailureCode: 'card_gone' });
    const charge = await aCharge(provider);
    const before = refundOf(charge.id, 100);
    const after = refundOf(charge.id, 200);
    const refused = refundOf(charge.id, 300);
    provider.failNextRefund('failBeforeRefund', 'failAfterRefund', 'failRefund');

    expect(await rejection(provider.createRefund(before, opts()))).toBeInstanceOf(
      ProviderTransientError,
    );
    expect(provider.refundsFor(before.providerKey)).toBe(0);
    expect(await rejection(provider.createRefund(after, opts()))).toMatchObject({
      name: 'ProviderTransientError',
      reason: 'reset_after_refund',
    });
    expect(provider.refundsFor(after.providerKey)).toBe(1);
    const failed = await provider.createRefund(refused, opts());
    expect(failed).toMatchObject({ status: 'failed', failureCode: 'card_gone', amountMinor: 300 });

    // Retries: the lost one is replayed, the refused one stays refused; nothing doubles.
    expect(await provider.createRefund(after, opts())).toMatchObject({ status: 'succeeded' });
    expect(await provider.createRefund(refused, opts())).toEqual(failed);
    expect(await provider.findRefund(refused.providerKey, found())).toEqual(failed);
    expect(provider.refundLedger().map((r) => r.providerKey)).toEqual([
      after.providerKey,
      refused.providerKey,
    ]);
    // A charge-fault queue is its own: the refund faults left none for charges.
    expect((await aCharge(provider)).status).toBe('succeeded');
  });

  it('hang waits for the signal; malformed and wrongAmount answer what does not fit', async () => {
    const provider = createFakeProvider();
    const charge = await aCharge(provider);
    provider.failNextRefund('hang', 'malformed', 'wrongAmount');

    const hung = await rejection(
      provider.createRefund(refundOf(charge.id, 100), { signal: AbortSignal.timeout(50) }),
    );
    expect(hung).toMatchObject({ name: 'ProviderTransientError', reason: 'timeout' });
    expect(provider.refundLedger()).toHaveLength(0);
    expect(await provider.createRefund(refundOf(charge.id, 100), opts())).toMatchObject({
      status: 'ok',
    });
    expect(await provider.createRefund(refundOf(charge.id, 100), opts())).toMatchObject({
      status: 'succeeded',
      amountMinor: 99,
    });
  });

  it('an outage fails every method; an unknown charge or currency is a plain error', async () => {
    const provider = createFakeProvider();
    const charge = await aCharge(provider);
    provider.outage(4);
    for (const call of [
      () => provider.createRefund(refundOf(charge.id, 1), opts()),
      () => provider.findRefund(aKey('x'), found()),
      () => provider.capture(captureOf(charge.id, 1), opts()),
      () => provider.findCapture({ providerKey: aKey('x'), providerChargeId: charge.id }, found()),
    ]) {
      expect(await rejection(call())).toBeInstanceOf(ProviderTransientError);
    }
    expect(provider.refundLedger()).toHaveLength(0);

    const unknown = await rejection(provider.createRefund(refundOf('pch_nope', 1), opts()));
    expect(unknown).toBeInstanceOf(Error);
    expect(unknown).not.toBeInstanceOf(ProviderTransientError);
    const currency = await rejection(
      provider.createRefund(refundOf(charge.id, 1, { currency: 'USD' }), opts()),
    );
    expect((currency as Error).message).toContain('USD');
    expect(provider.refundLedger()).toHaveLength(0);
    expect(provider.calls).toMatchObject({
      createRefund: 3,
      findRefund: 1,
      capture: 1,
      findCapture: 1,
    });
  });

  it('without dedupe, a second refund under a key refunds again, within the capture', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const charge = await aCharge(provider, { amountMinor: 1_000 });
    const input = refundOf(charge.id, 600);

    await provider.createRefund(input, opts());
    const second = await provider.createRefund(input, opts());
    expect(second).toMatchObject({ status: 'failed', failureCode: 'amount_too_large' });
    expect(provider.refundsFor(input.providerKey)).toBe(2);
  });
});

describe('the fake provider: authorizations and captures', () => {
  it('authorizes with capture: false; refunds wait for the capture, then stay within it', async () => {
    const provider = createFakeProvider();
    const input = chargeInput({ amountMinor: 1_000, capture: false });
    const authorized = await provider.createCharge(input, opts());

    expect(authorized).toMatchObject({ status: 'succeeded', amountMinor: 1_000 });
    expect(authorized).not.toHaveProperty('capture');
    expect(provider.ledger()[0]).toMatchObject({ capture: false });
    expect(await provider.createRefund(refundOf(authorized.id, 1), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'amount_too_large',
    });

    const capture = captureOf(authorized.id, 700);
    const captured = await provider.capture(capture, opts());
    expect(captured).toEqual({
      id: expect.stringMatching(/^pcp_/) as unknown,
      status: 'succeeded',
      amountMinor: 700,
      currency: 'NGN',
    });
    expect(await provider.createRefund(refundOf(authorized.id, 701), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'amount_too_large',
    });
    expect(await provider.createRefund(refundOf(authorized.id, 700), opts())).toMatchObject({
      status: 'succeeded',
    });
    // A charge captured at once keeps its ledger entry as it always was.
    await aCharge(provider);
    expect(provider.ledger()[1]).not.toHaveProperty('capture');
  });

  it('captures once: the key dedupes, another key is refused as already_captured', async () => {
    const provider = createFakeProvider();
    const authorized = await aCharge(provider, { amountMinor: 1_000, capture: false });
    const first = captureOf(authorized.id, 1_000);

    const captured = await provider.capture(first, opts());
    expect(await provider.capture(first, opts())).toEqual(captured);
    const second = await provider.capture(captureOf(authorized.id, 500), opts());
    expect(second).toMatchObject({ status: 'failed', failureCode: 'already_captured' });
    expect(provider.capturesFor(first.providerKey)).toBe(1);
    expect(provider.captureLedger().filter((c) => c.status === 'succeeded')).toHaveLength(1);

    provider.forgetIdempotencyKeys();
    const lookup = { providerKey: first.providerKey, providerChargeId: authorized.id };
    expect(await provider.findCapture(lookup, found())).toEqual(captured);
    expect(
      await provider.findCapture({ ...lookup, providerChargeId: 'pch_other' }, found()),
    ).toBeNull();
    expect(
      await provider.findCapture({ ...lookup, providerKey: aKey('never') }, found()),
    ).toBeNull();
  });

  it('refuses a capture past the authorization, of a captured charge, of a declined one', async () => {
    const provider = createFakeProvider();
    const authorized = await aCharge(provider, { amountMinor: 1_000, capture: false });
    const capturedAtOnce = await aCharge(provider);
    provider.failNext('decline');
    const declined = await aCharge(provider, { capture: false });

    expect(await provider.capture(captureOf(authorized.id, 1_001), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'amount_too_large',
    });
    expect(await provider.capture(captureOf(capturedAtOnce.id, 1), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'already_captured',
    });
    expect(await provider.capture(captureOf(declined.id, 1), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'charge_declined',
    });
    // A refused capture takes nothing: the authorization can still be captured.
    expect(await provider.capture(captureOf(authorized.id, 1_000), opts())).toMatchObject({
      status: 'succeeded',
    });
  });

  it('capture faults: before, after (replayed on retry), a refusal, with their own queue', async () => {
    const provider = createFakeProvider({ captureFailureCode: 'expired' });
    const one = await aCharge(provider, { capture: false });
    const two = await aCharge(provider, { capture: false });
    const lost = captureOf(one.id, 500);
    provider.failNextCapture('failBeforeCapture', 'failAfterCapture', 'failCapture');
    provider.failNextRefund('failBeforeRefund');

    expect(await rejection(provider.capture(lost, opts()))).toMatchObject({
      reason: 'http_503',
    });
    expect(await rejection(provider.capture(lost, opts()))).toMatchObject({
      reason: 'reset_after_capture',
    });
    expect(await provider.capture(captureOf(two.id, 500), opts())).toMatchObject({
      status: 'failed',
      failureCode: 'expired',
    });
    expect(await provider.capture(lost, opts())).toMatchObject({
      status: 'succeeded',
      amountMinor: 500,
    });
    expect(provider.capturesFor(lost.providerKey)).toBe(1);

    provider.clearFaults();
    expect(await provider.createRefund(refundOf(one.id, 500), opts())).toMatchObject({
      status: 'succeeded',
    });
  });

  it('calls beforeAnswer with the new methods and their keys', async () => {
    const seen: string[] = [];
    const provider = createFakeProvider({
      beforeAnswer: (method, key) => {
        seen.push(`${method}:${key.split('_')[1] ?? ''}`);
        return Promise.resolve();
      },
    });
    const charge = await aCharge(provider, { capture: false });
    const capture = captureOf(charge.id, 1_000);
    await provider.capture(capture, opts());
    await provider.findCapture(
      { providerKey: capture.providerKey, providerChargeId: charge.id },
      found(),
    );
    const refund = refundOf(charge.id, 10);
    await provider.createRefund(refund, opts());
    await provider.findRefund(refund.providerKey, found());

    expect(seen).toEqual([
      'createCharge:charge',
      'capture:capture',
      'findCapture:capture',
      'createRefund:refund',
      'findRefund:refund',
    ]);
  });
});
