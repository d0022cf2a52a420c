import { randomUUID } from 'node:crypto';
import {
  createMovementBooks,
  publicMovement,
  type FakeCaptureEntry,
  type FakeRefundEntry,
  type MovementAsk,
  type MovementTwist,
  type BooksResult,
} from './createMovementBooks.js';
import {
  ProviderTransientError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
  type FindCaptureInput,
  type PaymentProvider,
  type ProviderCallOptions,
  type ProviderCapture,
  type ProviderCharge,
  type ProviderRefund,
} from './PaymentProvider.js';

/** A failure the fake provider can be told to produce on one `createCharge` call. */
export type FakeFault =
  /** Fails before charging: nothing happened at the provider. */
  | 'failBeforeCharge'
  /** Charges, then fails as if the response was lost on the way back. */
  | 'failAfterCharge'
  /** Declines the charge (a real answer, not a failure). */
  | 'decline'
  /** Never answers until the caller's signal aborts. */
  | 'hang'
  /** Charges another amount than asked (a buggy integration), and says so truthfully. */
  | 'wrongAmount'
  /** Charges as asked, then answers with a charge that does not fit the port (`status: 'ok'`). */
  | 'malformed';

/**
 * A failure the fake provider can be told to produce on one `createRefund` call.
 *
 * - `failBeforeRefund`: fails transiently before refunding: nothing happened.
 * - `failAfterRefund`: refunds (or replays the refund under the key), then fails transiently,
 *   as if the answer was lost on the way back.
 * - `failRefund`: a new refund is refused, `failed` with `refundFailureCode` (a real answer).
 * - `hang`: never answers until the caller's signal aborts.
 * - `wrongAmount`: refunds another amount than asked (a buggy integration), and says so.
 * - `malformed`: refunds as asked, then answers `status: 'ok'`, which does not fit the port.
 */
export type FakeRefundFault =
  'failBeforeRefund' | 'failAfterRefund' | 'failRefund' | 'hang' | 'wrongAmount' | 'malformed';

/** A failure for one `capture` call: as {@link FakeRefundFault}, for a capture. */
export type FakeCaptureFault =
  'failBeforeCapture' | 'failAfterCapture' | 'failCapture' | 'hang' | 'wrongAmount' | 'malformed';

/**
 * One charge in the fake provider's ledger. `capture: false` marks a charge authorized only
 * (its capture, if any, is in `captureLedger()`); a charge captured at creation has no such field.
 */
export type FakeLedgerEntry = ProviderCharge & {
  providerKey: string;
  customerId: string;
  capture?: false;
};

/** The optional methods of the port that the fakes all implement. */
type MovementMethods = Required<
  Pick<PaymentProvider, 'createRefund' | 'findRefund' | 'capture' | 'findCapture'>
>;

/** The methods of the fake provider, as `calls` counts them and `beforeAnswer` names them. */
export type FakeProviderMethod =
  'createCharge' | 'findCharge' | 'createRefund' | 'findRefund' | 'capture' | 'findCapture';

/**
 * An in-memory payment provider for tests and the demo.
 *
 * Refunds and captures keep a real provider's rules: a capture takes at most what was
 * authorized, once per charge; a second capture of a captured charge (under another key, or of a
 * charge captured at creation) is answered `failed` with failure code `already_captured`; a
 * refund past what is left of the capture is answered `failed` with `amount_too_large`. Refused
 * movements are recorded under their key like any other (a retry gets the same answer). A
 * refund or capture of a charge it never made, or in another currency, throws a plain `Error`
 * (not transient): no provider would act on it.
 */
export type FakeProvider = PaymentProvider &
  MovementMethods & {
    /** Queues faults for the next `createCharge` calls, in order. */
    failNext(...faults: FakeFault[]): void;
    /** Queues faults for the next `createRefund` calls, in order. */
    failNextRefund(...faults: FakeRefundFault[]): void;
    /** Queues faults for the next `capture` calls, in order. */
    failNextCapture(...faults: FakeCaptureFault[]): void;
    /**
     * An outage: the next `calls` calls, of every method alike, fail transiently before doing
     * anything.
     */
    outage(calls: number): void;
    /** Drops the faults still queued and ends any outage. */
    clearFaults(): void;
    /**
     * Forgets every idempotency key (charges, refunds and captures), as real providers do after
     * their window (24 h at Stripe). The ledgers stay, and the lookups still search them.
     */
    forgetIdempotencyKeys(): void;
    /** Every charge the provider really made, duplicates included. */
    ledger(): readonly FakeLedgerEntry[];
    /** Copies of every refund recorded, refused (`failed`) ones and duplicates included. */
    refundLedger(): FakeRefundEntry[];
    /** Copies of every capture recorded, refused (`failed`) ones and duplicates included. */
    captureLedger(): FakeCaptureEntry[];
    /** How many real charges were made under `providerKey`: more than one is a double charge. */
    chargesFor(providerKey: string): number;
    /** How many refunds were recorded under `providerKey`: more than one is a double refund. */
    refundsFor(providerKey: string): number;
    /** How many captures were recorded under `providerKey`: more than one is a double capture. */
    capturesFor(providerKey: string): number;
    /** Calls received, by method. */
    calls: Record<FakeProviderMethod, number>;
  };

/** Options of {@link createFakeProvider}. */
export type FakeProviderOptions = {
  /**
   * When false, the provider does not dedupe on `providerKey` at all: a second `createCharge`
   * charges again, a second `createRefund` refunds again (within what is left to refund), a
   * second `capture` is refused as `already_captured`. Tests use it to prove the engine itself
   * never asks twice.
   * @defaultValue `true`
   */
  dedupe?: boolean;
  /** Decline code of declined charges. @defaultValue `'card_declined'` */
  declineCode?: string;
  /**
   * Failure code of a refund refused by the `failRefund` fault (Stripe's for a card gone).
   * @defaultValue `'expired_or_canceled_card'`
   */
  refundFailureCode?: string;
  /**
   * Failure code of a capture refused by the `failCapture` fault (Stripe's for an expired
   * authorization).
   * @defaultValue `'charge_expired_for_capture'`
   */
  captureFailureCode?: string;
  /** Runs before every call answers; a test can block here to hold an attempt mid-call. */
  beforeAnswer?: (method: FakeProviderMethod, providerKey: string) => Promise<void>;
};

/**
 * An in-memory provider that dedupes on `providerKey` like a real one, keeps a ledger of every
 * real charge, refund and capture, and fails on request.
 */
export function createFakeProvider(options: FakeProviderOptions = {}): FakeProvider {
  const dedupe = options.dedupe ?? true;
  const declineCode = options.declineCode ?? 'card_declined';
  const refundFailureCode = options.refundFailureCode ?? 'expired_or_canceled_card';
  const captureFailureCode = options.captureFailureCode ?? 'charge_expired_for_capture';
  const ledger: FakeLedgerEntry[] = [];
  const byId = new Map<string, FakeLedgerEntry>();
  let idempotency = new Map<string, FakeLedgerEntry>();
  const faults: FakeFault[] = [];
  const books = createMovementBooks({
    refundIdPrefix: 'pre_',
    captureIdPrefix: 'pcp_',
    now: Date.now,
  });
  let refundKeys = new Map<string, FakeRefundEntry>();
  let captureKeys = new Map<string, FakeCaptureEntry>();
  const refundFaults: FakeRefundFault[] = [];
  const captureFaults: FakeCaptureFault[] = [];
  let outageCalls = 0;
  const duringOutage = () => {
    if (outageCalls <= 0) return;
    outageCalls -= 1;
    throw new ProviderTransientError('http_503');
  };
  const calls: Record<FakeProviderMethod, number> = {
    createCharge: 0,
    findCharge: 0,
    createRefund: 0,
    findRefund: 0,
    capture: 0,
    findCapture: 0,
  };

  const charge = (
    input: CreateChargeInput,
    declined: boolean,
    amountMinor = input.amountMinor,
  ): FakeLedgerEntry => {
    const entry: FakeLedgerEntry = {
      id: `pch_${randomUUID().replaceAll('-', '')}`,
      status: declined ? 'declined' : 'succeeded',
      amountMinor,
      currency: input.currency,
      ...(declined ? { declineCode } : {}),
      providerKey: input.providerKey,
      customerId: input.customerId,
      ...(input.capture === false ? { capture: false as const } : {}),
    };
    ledger.push(entry);
    byId.set(entry.id, entry);
    if (dedupe) idempotency.set(input.providerKey, entry);
    return entry;
  };

  const publicView = (entry: FakeLedgerEntry): ProviderCharge => ({
    id: entry.id,
    status: entry.status,
    amountMinor: entry.amountMinor,
    currency: entry.currency,
    ...(entry.declineCode === undefined ? {} : { declineCode: entry.declineCode }),
  });

  return {
    calls,
    async createCharge(input: CreateChargeInput, opts: ProviderCallOptions) {
      calls.createCharge += 1;
      duringOutage();
      const fault = faults.shift();
      await options.beforeAnswer?.('createCharge', input.providerKey);
      if (fault === 'hang') return hangUntilAborted(opts.signal);
      if (fault === 'failBeforeCharge') throw new ProviderTransientError('http_503');
      const existing = idempotency.get(input.providerKey);
      const entry =
        existing ??
        charge(
          input,
          fault === 'decline',
          fault === 'wrongAmount' ? wrongAmount(input.amountMinor) : input.amountMinor,
        );
      if (fault === 'failAfterCharge') throw new ProviderTransientError('reset_after_charge');
      if (fault === 'malformed') return { ...publicView(entry), status: 'ok' } as never;
      return publicView(entry);
    },
    async findCharge(providerKey: string) {
      calls.findCharge += 1;
      duringOutage();
      await options.beforeAnswer?.('findCharge', providerKey);
      // Searches the ledger itself, not the idempotency cache: it works after the window too.
      const entry = ledger.find((e) => e.providerKey === providerKey);
      return entry ? publicView(entry) : null;
    },
    async createRefund(input: CreateRefundInput, opts: ProviderCallOptions) {
      calls.createRefund += 1;
      duringOutage();
      const fault = refundFaults.shift();
      await options.beforeAnswer?.('createRefund', input.providerKey);
      if (fault === 'hang') return hangUntilAborted(opts.signal);
      if (fault === 'failBeforeRefund') throw new ProviderTransientError('http_503');
      const entry =
        refundKeys.get(input.providerKey) ??
        record(refundKeys, input.providerKey, () =>
          books.refund(
            ask(input),
            byId.get(input.providerChargeId),
            twist(fault, input, 'failRefund', refundFailureCode),
          ),
        );
      if (fault === 'failAfterRefund') throw new ProviderTransientError('reset_after_refund');
      return answer<ProviderRefund>(entry, fault === 'malformed');
    },
    async findRefund(providerKey: string) {
      calls.findRefund += 1;
      duringOutage();
      await options.beforeAnswer?.('findRefund', providerKey);
      // The books, not the idempotency cache: it works after the window too.
      const entry = books.findRefund(providerKey);
      return entry ? publicMovement(entry) : null;
    },
    async capture(input: CaptureInput, opts: ProviderCallOptions) {
      calls.capture += 1;
      duringOutage();
      const fault = captureFaults.shift();
      await options.beforeAnswer?.('capture', input.providerKey);
      if (fault === 'hang') return hangUntilAborted(opts.signal);
      if (fault === 'failBeforeCapture') throw new ProviderTransientError('http_503');
      const entry =
        captureKeys.get(input.providerKey) ??
        record(captureKeys, input.providerKey, () =>
          books.capture(
            ask(input),
            byId.get(input.providerChargeId),
            twist(fault, input, 'failCapture', captureFailureCode),
          ),
        );
      if (fault === 'failAfterCapture') throw new ProviderTransientError('reset_after_capture');
      return answer<ProviderCapture>(entry, fault === 'malformed');
    },
    async findCapture(input: FindCaptureInput) {
      calls.findCapture += 1;
      duringOutage();
      await options.beforeAnswer?.('findCapture', input.providerKey);
      const entry = books.findCapture(input.providerKey, input.providerChargeId);
      return entry ? publicMovement(entry) : null;
    },
    failNext(...next: FakeFault[]) {
      faults.push(...next);
    },
    failNextRefund(...next: FakeRefundFault[]) {
      refundFaults.push(...next);
    },
    failNextCapture(...next: FakeCaptureFault[]) {
      captureFaults.push(...next);
    },
    outage(n: number) {
      outageCalls = n;
    },
    clearFaults() {
      faults.length = 0;
      refundFaults.length = 0;
      captureFaults.length = 0;
      outageCalls = 0;
    },
    forgetIdempotencyKeys() {
      idempotency = new Map();
      refundKeys = new Map();
      captureKeys = new Map();
    },
    ledger: () => ledger,
    refundLedger: () => books.refunds(),
    captureLedger: () => books.captures(),
    chargesFor: (providerKey) => ledger.filter((e) => e.providerKey === providerKey).length,
    refundsFor: (providerKey) =>
      books.refunds().filter((e) => e.providerKey === providerKey).length,
    capturesFor: (providerKey) =>
      books.captures().filter((e) => e.providerKey === providerKey).length,
  };

  /** A new movement from the books, remembered under its key unless the fake does not dedupe. */
  function record<E>(keys: Map<string, E>, providerKey: string, make: () => BooksResult<E>): E {
    const result = make();
    if (result.kind === 'invalid') {
      throw new Error(`fake provider refused the request (${result.status}): ${result.message}`);
    }
    if (dedupe) keys.set(providerKey, result.entry);
    return result.entry;
  }
}

function ask(input: CreateRefundInput | CaptureInput): MovementAsk {
  return {
    providerKey: input.providerKey,
    providerChargeId: input.providerChargeId,
    amountMinor: input.amountMinor,
    currency: input.currency,
    ...('reason' in input && input.reason !== undefined ? { reason: input.reason } : {}),
  };
}

/** What a queued fault changes in a new movement. */
function twist(
  fault: FakeRefundFault | FakeCaptureFault | undefined,
  input: { amountMinor: number },
  failFault: 'failRefund' | 'failCapture',
  failureCode: string,
): MovementTwist {
  if (fault === failFault) return { failWith: failureCode };
  if (fault === 'wrongAmount') return { amountMinor: wrongAmount(input.amountMinor) };
  return {};
}

/** The movement as the port shows it, or one that does not fit the port (`malformed`). */
function answer<T extends ProviderRefund | ProviderCapture>(
  entry: FakeRefundEntry | FakeCaptureEntry,
  malformed: boolean,
): T {
  const view = publicMovement(entry);
  return (malformed ? { ...view, status: 'ok' } : view) as T;
}

/** Another amount than asked, never zero. */
export function wrongAmount(amountMinor: number): number {
  return amountMinor > 1 ? amountMinor - 1 : amountMinor + 1;
}

function hangUntilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new ProviderTransientError('timeout', { cause: signal.reason }));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}
