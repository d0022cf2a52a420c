import { randomUUID } from 'node:crypto';
import {
  ProviderTransientError,
  type CreateChargeInput,
  type PaymentProvider,
  type ProviderCallOptions,
  type ProviderCharge,
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

/** One charge in the fake provider's ledger. */
export type FakeLedgerEntry = ProviderCharge & { providerKey: string; customerId: string };

/** An in-memory payment provider for tests and the demo. */
export type FakeProvider = PaymentProvider & {
  /** Queues faults for the next `createCharge` calls, in order. */
  failNext(...faults: FakeFault[]): void;
  /**
   * An outage: the next `calls` calls, `findCharge` and `createCharge` alike, fail transiently
   * before doing anything.
   */
  outage(calls: number): void;
  /** Drops the faults still queued and ends any outage. */
  clearFaults(): void;
  /** Forgets every idempotency key, as real providers do after their window (24 h at Stripe). */
  forgetIdempotencyKeys(): void;
  /** Every charge the provider really made, duplicates included. */
  ledger(): readonly FakeLedgerEntry[];
  /** How many real charges were made under `providerKey`: more than one is a double charge. */
  chargesFor(providerKey: string): number;
  /** Calls received, by method. */
  calls: { createCharge: number; findCharge: number };
};

/** Options of {@link createFakeProvider}. */
export type FakeProviderOptions = {
  /**
   * When false, the provider does not dedupe on `providerKey` at all: a second `createCharge`
   * charges again. Tests use it to prove the engine itself never asks twice.
   * @defaultValue `true`
   */
  dedupe?: boolean;
  /** Decline code of declined charges. @defaultValue `'card_declined'` */
  declineCode?: string;
  /** Runs before every call answers; a test can block here to hold an attempt mid-call. */
  beforeAnswer?: (method: 'createCharge' | 'findCharge', providerKey: string) => Promise<void>;
};

/**
 * An in-memory provider that dedupes on `providerKey` like a real one, keeps a ledger of every
 * real charge, and fails on request.
 */
export function createFakeProvider(options: FakeProviderOptions = {}): FakeProvider {
  const dedupe = options.dedupe ?? true;
  const declineCode = options.declineCode ?? 'card_declined';
  const ledger: FakeLedgerEntry[] = [];
  let idempotency = new Map<string, FakeLedgerEntry>();
  const faults: FakeFault[] = [];
  let outageCalls = 0;
  const duringOutage = () => {
    if (outageCalls <= 0) return;
    outageCalls -= 1;
    throw new ProviderTransientError('http_503');
  };
  const calls = { createCharge: 0, findCharge: 0 };

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
    };
    ledger.push(entry);
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
    failNext(...next: FakeFault[]) {
      faults.push(...next);
    },
    outage(n: number) {
      outageCalls = n;
    },
    clearFaults() {
      faults.length = 0;
      outageCalls = 0;
    },
    forgetIdempotencyKeys() {
      idempotency = new Map();
    },
    ledger: () => ledger,
    chargesFor: (providerKey) => ledger.filter((e) => e.providerKey === providerKey).length,
  };
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
