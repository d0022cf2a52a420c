import { randomUUID } from 'node:crypto';
import {
  ProviderTransientError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
  type PaymentProvider,
  type ProviderCapture,
  type ProviderRefund,
} from '../provider/PaymentProvider.js';
import { check, CheckFailed, describeAnswer, describeError } from './conformanceCheck.js';

/** What the refund and capture checks borrow from the battery. */
export type MovementCheckContext = {
  provider: PaymentProvider;
  /** Runs one named check and records its result. */
  run: (name: string, body: () => Promise<string | { skip: string }>) => Promise<void>;
  /** A fresh charge input (a new provider key) with the fixture's customer and currency. */
  chargeInput: (overrides?: Partial<CreateChargeInput>) => CreateChargeInput;
  newKey: () => string;
  signal: () => AbortSignal;
};

/**
 * The checks of the optional capabilities, each run only when the provider has both of its
 * methods: refunds (`createRefund`/`findRefund`) and captures (`capture`/`findCapture`).
 */
export async function runMovementChecks(ctx: MovementCheckContext): Promise<void> {
  const { provider, run, newKey, signal } = ctx;
  if (provider.createRefund && provider.findRefund) {
    const createRefund = provider.createRefund.bind(provider);
    const findRefund = provider.findRefund.bind(provider);
    await run('refunds: partial, deduped, found, never past the capture', async () => {
      const reservedAt = new Date();
      const sent = ctx.chargeInput({ amountMinor: 2_000 });
      const charge = await provider.createCharge(sent, { signal: signal() });
      check(charge.status === 'succeeded', `the charge to refund: ${describeAnswer(charge)}`);
      const refundOf = (amountMinor: number): CreateRefundInput => ({
        providerKey: newKey(),
        merchantId: sent.merchantId,
        refundId: randomUUID(),
        chargeId: sent.chargeId,
        providerChargeId: charge.id,
        amountMinor,
        currency: sent.currency,
      });
      const request = refundOf(500);

      const first = await createRefund(request, { signal: signal() });
      expectMovement(first, request, 'refund');
      const again = await createRefund(request, { signal: signal() });
      check(again.id === first.id, `two refunds under one key: ${first.id}, ${again.id}`);
      const found = await findRefund(request.providerKey, {
        signal: signal(),
        reservedAt,
      });
      check(found?.id === first.id, `findRefund answered ${describeAnswer(found)}`);
      const none = await findRefund(newKey(), { signal: signal(), reservedAt });
      check(none === null, `findRefund of a key never used answered ${describeAnswer(none)}`);
      // chargeonce records a provider refund once per merchant: a second refund of the same
      // charge must have an id of its own, or it would be parked as already recorded.
      const secondRequest = refundOf(300);
      const second = await createRefund(secondRequest, { signal: signal() });
      expectMovement(second, secondRequest, 'refund');
      check(second.id !== first.id, `two refunds of one charge answered with one id: ${first.id}`);
      const over = await settle(createRefund(refundOf(1_201), { signal: signal() }));
      expectRefused(over, 'a refund past what is left of the capture');
      return `refunded 500 and 300 of 2000 as ${first.id} and ${second.id}, deduped and found; 1201 more: ${describeOutcome(over)}`;
    });
  }

  if (provider.capture && provider.findCapture) {
    const capture = provider.capture.bind(provider);
    const findCapture = provider.findCapture.bind(provider);
    await run('captures: authorize only, capture part once, found', async () => {
      const reservedAt = new Date();
      const sent = ctx.chargeInput({ amountMinor: 2_000, capture: false });
      const authorized = await provider.createCharge(sent, { signal: signal() });
      check(
        authorized.status === 'succeeded' && authorized.amountMinor === sent.amountMinor,
        `the authorization: ${describeAnswer(authorized)}`,
      );
      const request: CaptureInput = {
        providerKey: newKey(),
        merchantId: sent.merchantId,
        captureId: randomUUID(),
        chargeId: sent.chargeId,
        providerChargeId: authorized.id,
        amountMinor: 1_500,
        currency: sent.currency,
      };
      const lookup = { providerKey: request.providerKey, providerChargeId: authorized.id };
      const before = await findCapture(lookup, { signal: signal(), reservedAt });
      check(before === null, `findCapture before any capture answered ${describeAnswer(before)}`);

      const first = await capture(request, { signal: signal() });
      expectMovement(first, request, 'capture');
      const again = await capture(request, { signal: signal() });
      check(
        again.id === first.id && again.amountMinor === first.amountMinor,
        `the same key twice answered ${describeAnswer(first)}, then ${describeAnswer(again)}`,
      );
      const found = await findCapture(lookup, { signal: signal(), reservedAt });
      check(
        found?.id === first.id && found.amountMinor === request.amountMinor,
        `findCapture answered ${describeAnswer(found)}`,
      );
      const second = await settle(
        capture.call(
          provider,
          { ...request, providerKey: newKey(), captureId: randomUUID(), amountMinor: 100 },
          { signal: signal() },
        ),
      );
      expectRefused(second, 'a second capture, under another key');
      return `captured 1500 of 2000 as ${first.id}, deduped and found; again: ${describeOutcome(second)}`;
    });
  }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );
}

function expectMovement(
  answer: ProviderRefund | ProviderCapture,
  sent: { amountMinor: number; currency: string },
  what: string,
): void {
  check(
    typeof answer?.id === 'string' && answer.id !== '',
    `no ${what} id in ${describeAnswer(answer)}`,
  );
  check(
    answer.status === 'succeeded' &&
      answer.amountMinor === sent.amountMinor &&
      answer.currency === sent.currency,
    `sent ${sent.amountMinor} ${sent.currency}, got ${describeAnswer(answer)}`,
  );
}

/**
 * A provider must refuse what breaks its money rules: with a `failed` answer, or an error no
 * retry fixes. A transient error would have the engine retry, and a success moved money twice.
 */
function expectRefused(outcome: Settled<ProviderRefund | ProviderCapture>, what: string): void {
  if (outcome.ok) {
    check(
      outcome.value.status === 'failed',
      `${what} was answered ${describeAnswer(outcome.value)}`,
    );
    return;
  }
  if (outcome.error instanceof CheckFailed) throw outcome.error;
  check(
    !(outcome.error instanceof ProviderTransientError),
    `${what} must be refused for good, got ${describeError(outcome.error)}`,
  );
}

function describeOutcome(outcome: Settled<ProviderRefund | ProviderCapture>): string {
  return outcome.ok
    ? `failed (${outcome.value.failureCode ?? 'no code'})`
    : `refused, ${describeError(outcome.error)}`;
}
