import {
  createMovementBooks,
  type BookedCharge,
  type FakeCaptureEntry,
  type FakeRefundEntry,
  type MovementAsk,
  type MovementTwist,
} from './createMovementBooks.js';
import { createKeyMemory } from './createKeyMemory.js';

/** The body of a refund request, as the server validated it. */
export type RefundBody = {
  /** The provider's id of the charge to refund. */
  chargeId: string;
  amountMinor: number;
  currency: string;
  reason?: string;
};

/** The body of a capture request (the charge is in the path), as the server validated it. */
export type CaptureBody = { amountMinor: number; currency: string };

/** What asking the server's books for a refund or a capture came to. */
export type MovementResult<E> =
  | { kind: 'created' | 'replayed'; entry: E }
  /** The key is remembered with a different body: nothing was done. */
  | { kind: 'keyReused' }
  /** An unknown charge, or another currency than the charge's: nothing was done. */
  | { kind: 'invalid'; status: 400 | 404; message: string };

/** The fake provider server's refunds and captures, and the idempotency keys it remembers. */
export type ServerMovements = {
  refund(
    providerKey: string,
    body: RefundBody,
    fingerprint: string,
    twist: MovementTwist,
  ): MovementResult<FakeRefundEntry>;
  capture(
    providerKey: string,
    providerChargeId: string,
    body: CaptureBody,
    fingerprint: string,
    twist: MovementTwist,
  ): MovementResult<FakeCaptureEntry>;
  /** The first refund ever recorded under `providerKey`, remembered or not. */
  findRefund(providerKey: string): FakeRefundEntry | undefined;
  /** The first capture ever recorded under `providerKey` (of that charge, when given). */
  findCapture(providerKey: string, providerChargeId?: string): FakeCaptureEntry | undefined;
  refunds(): FakeRefundEntry[];
  captures(): FakeCaptureEntry[];
  /** Forgets every refund and capture idempotency key now; the records stay. */
  forget(): void;
};

/** Creates the refund and capture books of the fake provider server. */
export function createServerMovements(options: {
  idempotencyWindowMs: number;
  now: () => number;
  /** The charge the server made with this id. */
  charge: (providerChargeId: string) => BookedCharge | undefined;
}): ServerMovements {
  const { now, charge } = options;
  const books = createMovementBooks({ refundIdPrefix: 're_', captureIdPrefix: 'cap_', now });
  // Refund and capture keys are remembered apart from charge keys, and from each other: a key
  // names one request to one endpoint, as at Stripe.
  const refundKeys = createKeyMemory<FakeRefundEntry>(options.idempotencyWindowMs);
  const captureKeys = createKeyMemory<FakeCaptureEntry>(options.idempotencyWindowMs);

  return {
    refund(providerKey, body, fingerprint, twist) {
      const at = now();
      const hit = refundKeys.recall(providerKey, at);
      if (hit) return replay(hit, fingerprint);
      const ask: MovementAsk = {
        providerKey,
        providerChargeId: body.chargeId,
        amountMinor: body.amountMinor,
        currency: body.currency,
        ...(body.reason === undefined ? {} : { reason: body.reason }),
      };
      const result = books.refund(ask, charge(body.chargeId), twist);
      if (result.kind === 'invalid') return result;
      refundKeys.remember(providerKey, { entry: result.entry, fingerprint, at });
      return { kind: 'created', entry: result.entry };
    },
    capture(providerKey, providerChargeId, body, fingerprint, twist) {
      const at = now();
      const hit = captureKeys.recall(providerKey, at);
      if (hit) return replay(hit, fingerprint);
      const ask: MovementAsk = { providerKey, providerChargeId, ...body };
      const result = books.capture(ask, charge(providerChargeId), twist);
      if (result.kind === 'invalid') return result;
      captureKeys.remember(providerKey, { entry: result.entry, fingerprint, at });
      return { kind: 'created', entry: result.entry };
    },
    findRefund: (providerKey) => books.findRefund(providerKey),
    findCapture: (providerKey, providerChargeId) =>
      books.findCapture(providerKey, providerChargeId),
    refunds: () => books.refunds(),
    captures: () => books.captures(),
    forget() {
      refundKeys.forget();
      captureKeys.forget();
    },
  };
}

function replay<E>(hit: { entry: E; fingerprint: string }, fingerprint: string): MovementResult<E> {
  return hit.fingerprint === fingerprint
    ? { kind: 'replayed', entry: hit.entry }
    : { kind: 'keyReused' };
}
