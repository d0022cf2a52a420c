import { randomUUID } from 'node:crypto';
import type { ProviderCapture, ProviderRefund } from './PaymentProvider.js';

/** One refund a fake provider recorded, refused ones (`failed`) included. */
export type FakeRefundEntry = ProviderRefund & {
  providerKey: string;
  /** The provider's id of the charge refunded. */
  providerChargeId: string;
  /** When the refund was recorded, ISO 8601. */
  createdAt: string;
  reason?: string;
};

/** One capture a fake provider recorded, refused ones (`failed`) included. */
export type FakeCaptureEntry = ProviderCapture & {
  providerKey: string;
  /** The provider's id of the authorized charge. */
  providerChargeId: string;
  /** When the capture was recorded, ISO 8601. */
  createdAt: string;
};

/** What the books need to know of a charge the provider made. */
export type BookedCharge = {
  id: string;
  status: 'succeeded' | 'declined';
  amountMinor: number;
  currency: string;
  /** `false`: authorized only, waiting for a capture. */
  capture?: false;
};

/** A refund or capture as asked. */
export type MovementAsk = {
  providerKey: string;
  providerChargeId: string;
  amountMinor: number;
  currency: string;
  reason?: string;
};

/** A fault the caller injects into one new movement. */
export type MovementTwist = {
  /** Refuse it with this failure code (a real answer). */
  failWith?: string;
  /** Move this amount instead of the one asked (a buggy integration). */
  amountMinor?: number;
};

/** What asking the books for a movement came to. */
export type BooksResult<E> =
  | { kind: 'made'; entry: E }
  /** A request no provider would act on (an unknown charge, another currency): nothing recorded. */
  | { kind: 'invalid'; status: 400 | 404; message: string };

type Invalid = Extract<BooksResult<never>, { kind: 'invalid' }>;

/** Failure codes of the movements the books refuse on their own. */
export const MOVEMENT_FAILURE_CODES = {
  /** A refund past what is left of the capture, or a capture past the authorization. */
  amountTooLarge: 'amount_too_large',
  /** A capture of a charge already captured (at creation, or by another capture). */
  alreadyCaptured: 'already_captured',
  /** A capture of a declined charge: nothing was authorized. */
  chargeDeclined: 'charge_declined',
} as const;

/**
 * The money side of a fake provider: refunds and captures of the charges it made, and the rules
 * a real provider holds whatever its callers do: a capture takes at most what was authorized,
 * once; the refunds of a charge never add up to more than was captured. A movement that breaks a
 * rule is recorded as `failed`, with its failure code, like any refusal the provider answers.
 *
 * Deduplication is not done here: each fake keeps its own idempotency keys and asks the books
 * only for a new movement.
 */
export type MovementBooks = {
  refund(
    ask: MovementAsk,
    charge: BookedCharge | undefined,
    twist?: MovementTwist,
  ): BooksResult<FakeRefundEntry>;
  capture(
    ask: MovementAsk,
    charge: BookedCharge | undefined,
    twist?: MovementTwist,
  ): BooksResult<FakeCaptureEntry>;
  /** The first refund ever recorded under `providerKey`, or undefined. */
  findRefund(providerKey: string): FakeRefundEntry | undefined;
  /** The first capture ever recorded under `providerKey` (of that charge, when given). */
  findCapture(providerKey: string, providerChargeId?: string): FakeCaptureEntry | undefined;
  /** Copies of every refund, in the order they were recorded. */
  refunds(): FakeRefundEntry[];
  /** Copies of every capture, in the order they were recorded. */
  captures(): FakeCaptureEntry[];
};

/** Creates the books of one fake provider. */
export function createMovementBooks(options: {
  /** Prefixes of the ids the books give refunds and captures. */
  refundIdPrefix: string;
  captureIdPrefix: string;
  now: () => number;
}): MovementBooks {
  const refunds: FakeRefundEntry[] = [];
  const captures: FakeCaptureEntry[] = [];
  // How much of each charge was refunded, and its succeeded capture: kept as the entries are
  // recorded so that a check never scans the whole ledger.
  const refundedMinor = new Map<string, number>();
  const capturedBy = new Map<string, FakeCaptureEntry>();

  const capturedMinor = (charge: BookedCharge): number => {
    if (charge.status !== 'succeeded') return 0;
    if (charge.capture !== false) return charge.amountMinor;
    return capturedBy.get(charge.id)?.amountMinor ?? 0;
  };

  /** The charge asked about, or why no provider would act on the request. */
  const chargeOf = (
    ask: MovementAsk,
    charge: BookedCharge | undefined,
  ): { kind: 'charge'; charge: BookedCharge } | Invalid => {
    if (!charge) {
      return { kind: 'invalid', status: 404, message: `no such charge: ${ask.providerChargeId}` };
    }
    if (charge.currency !== ask.currency) {
      return {
        kind: 'invalid',
        status: 400,
        message: `charge ${charge.id} is in ${charge.currency}, not ${ask.currency}`,
      };
    }
    return { kind: 'charge', charge };
  };

  const common = (ask: MovementAsk, prefix: string, amountMinor: number, failureCode?: string) => ({
    id: `${prefix}${randomUUID().replaceAll('-', '')}`,
    status: failureCode === undefined ? ('succeeded' as const) : ('failed' as const),
    amountMinor,
    currency: ask.currency,
    ...(failureCode === undefined ? {} : { failureCode }),
    providerKey: ask.providerKey,
    providerChargeId: ask.providerChargeId,
    createdAt: new Date(options.now()).toISOString(),
  });

  return {
    refund(ask, asked, twist = {}) {
      const found = chargeOf(ask, asked);
      if (found.kind === 'invalid') return found;
      const { charge } = found;
      const amountMinor = twist.amountMinor ?? ask.amountMinor;
      const left = capturedMinor(charge) - (refundedMinor.get(charge.id) ?? 0);
      const failureCode =
        twist.failWith ?? (amountMinor > left ? MOVEMENT_FAILURE_CODES.amountTooLarge : undefined);
      const entry: FakeRefundEntry = {
        ...common(ask, options.refundIdPrefix, amountMinor, failureCode),
        ...(ask.reason === undefined ? {} : { reason: ask.reason }),
      };
      refunds.push(entry);
      if (entry.status === 'succeeded') {
        refundedMinor.set(charge.id, (refundedMinor.get(charge.id) ?? 0) + amountMinor);
      }
      return { kind: 'made', entry };
    },
    capture(ask, asked, twist = {}) {
      const found = chargeOf(ask, asked);
      if (found.kind === 'invalid') return found;
      const { charge } = found;
      const amountMinor = twist.amountMinor ?? ask.amountMinor;
      const failureCode = twist.failWith ?? captureRefusal(charge, amountMinor);
      const entry: FakeCaptureEntry = common(
        ask,
        options.captureIdPrefix,
        amountMinor,
        failureCode,
      );
      captures.push(entry);
      if (entry.status === 'succeeded') capturedBy.set(charge.id, entry);
      return { kind: 'made', entry };
    },
    findRefund: (providerKey) => refunds.find((entry) => entry.providerKey === providerKey),
    findCapture: (providerKey, providerChargeId) =>
      captures.find(
        (entry) =>
          entry.providerKey === providerKey &&
          (providerChargeId === undefined || entry.providerChargeId === providerChargeId),
      ),
    refunds: () => refunds.map((entry) => structuredClone(entry)),
    captures: () => captures.map((entry) => structuredClone(entry)),
  };

  function captureRefusal(charge: BookedCharge, amountMinor: number): string | undefined {
    if (charge.status !== 'succeeded') return MOVEMENT_FAILURE_CODES.chargeDeclined;
    // A charge captured at creation cannot be captured again, as at Stripe.
    if (charge.capture !== false || capturedBy.has(charge.id)) {
      return MOVEMENT_FAILURE_CODES.alreadyCaptured;
    }
    if (amountMinor > charge.amountMinor) return MOVEMENT_FAILURE_CODES.amountTooLarge;
    return undefined;
  }
}

/** A refund or capture as the provider's API shows it. */
export function publicMovement(
  entry: FakeRefundEntry | FakeCaptureEntry,
): ProviderRefund & ProviderCapture {
  return {
    id: entry.id,
    status: entry.status,
    amountMinor: entry.amountMinor,
    currency: entry.currency,
    ...(entry.failureCode === undefined ? {} : { failureCode: entry.failureCode }),
  };
}
