import type {
  CreateChargeInput,
  CreateRefundInput,
  PaymentProvider,
  ProviderCharge,
  ProviderRefund,
} from '../../src/provider/PaymentProvider.js';

/** The in-process provider every design calls, with what it saw. */
export type BenchProvider = PaymentProvider & {
  /** Calls and real charges since the provider was made. */
  counts(): { createCalls: number; findCalls: number; charges: number; refunds: number };
  /** Forgets every charge, so memory does not grow across rounds (their tables are emptied). */
  forget(): void;
};

/**
 * A provider that answers after one turn of the event loop and dedupes on `providerKey`. It is
 * the same for all three designs and as cheap as a provider can be, so what is measured is the
 * database work and the code around it. A real network call would only add the same constant to
 * each design's latency.
 */
export function createBenchProvider(): BenchProvider {
  let charges = new Map<string, ProviderCharge>();
  let refunds = new Map<string, ProviderRefund>();
  let made = 0;
  let refunded = 0;
  let createCalls = 0;
  let findCalls = 0;
  return {
    async createCharge(input: CreateChargeInput): Promise<ProviderCharge> {
      createCalls += 1;
      await turnOfEventLoop();
      const existing = charges.get(input.providerKey);
      if (existing) return existing;
      made += 1;
      const charge: ProviderCharge = {
        id: `pch_${made}`,
        status: 'succeeded',
        amountMinor: input.amountMinor,
        currency: input.currency,
      };
      charges.set(input.providerKey, charge);
      return charge;
    },
    async findCharge(providerKey: string): Promise<ProviderCharge | null> {
      findCalls += 1;
      await turnOfEventLoop();
      return charges.get(providerKey) ?? null;
    },
    async createRefund(input: CreateRefundInput): Promise<ProviderRefund> {
      await turnOfEventLoop();
      const existing = refunds.get(input.providerKey);
      if (existing) return existing;
      refunded += 1;
      const refund: ProviderRefund = {
        id: `pre_${refunded}`,
        status: 'succeeded',
        amountMinor: input.amountMinor,
        currency: input.currency,
      };
      refunds.set(input.providerKey, refund);
      return refund;
    },
    async findRefund(providerKey: string): Promise<ProviderRefund | null> {
      await turnOfEventLoop();
      return refunds.get(providerKey) ?? null;
    },
    counts: () => ({ createCalls, findCalls, charges: made, refunds: refunded }),
    forget: () => {
      charges = new Map();
      refunds = new Map();
    },
  };
}

/** An answer is never synchronous, as a network call's is not. */
function turnOfEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
