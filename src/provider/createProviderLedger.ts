import { randomUUID } from 'node:crypto';
import type { FakeLedgerEntry } from './createFakeProvider.js';
import { createKeyMemory } from './createKeyMemory.js';
import type { ProviderCharge } from './PaymentProvider.js';

/** One real charge the fake provider server made, duplicates included. */
export type FakeServerLedgerEntry = FakeLedgerEntry & {
  /** When the charge was made, ISO 8601. */
  createdAt: string;
  /**
   * The amount the request asked for: `amountMinor` unless a `wrongAmount` fault charged
   * another. A reconciler tells by it a provider that charged the wrong amount from a client
   * that asked for one.
   */
  requestedAmountMinor: number;
  description?: string;
  metadata?: Record<string, string>;
};

/** The body of a charge request, as the server validated it. */
export type ChargeBody = {
  customerId: string;
  amountMinor: number;
  currency: string;
  description?: string;
  metadata?: Record<string, string>;
  /** `false`: authorize only. */
  capture?: false;
};

/** What asking the ledger to charge came to. */
export type ChargeResult =
  | { kind: 'created' | 'replayed'; entry: FakeServerLedgerEntry }
  /** The key is remembered with a different body: nothing was charged. */
  | { kind: 'keyReused' };

/** The provider's books: every charge it made, and the idempotency keys it still remembers. */
export type ProviderLedger = {
  /**
   * Charges `amountMinor` (the body's, unless a fault twisted it) under `providerKey`, unless a
   * charge under it is still remembered.
   */
  charge(
    providerKey: string,
    body: ChargeBody,
    fingerprint: string,
    declined: boolean,
    amountMinor?: number,
  ): ChargeResult;
  /** The first charge ever made under `providerKey`, remembered or not. */
  find(providerKey: string): FakeServerLedgerEntry | undefined;
  /** The charge with this provider id (the live entry, for the refund and capture books). */
  byId(id: string): FakeServerLedgerEntry | undefined;
  /** Copies of every charge, in the order they were made. */
  entries(): FakeServerLedgerEntry[];
  /** Forgets every idempotency key now; the charges themselves stay. */
  forget(): void;
};

/** Creates the ledger of the fake provider server. */
export function createProviderLedger(options: {
  idempotencyWindowMs: number;
  now: () => number;
  declineCode: string;
}): ProviderLedger {
  const { idempotencyWindowMs, now, declineCode } = options;
  const entries: FakeServerLedgerEntry[] = [];
  const byId = new Map<string, FakeServerLedgerEntry>();
  // The dedupe cache is separate from the ledger on purpose: real providers expire the first
  // and keep the second, which is why chargeonce's `findCharge` searches by key, not by cache.
  const remembered = createKeyMemory<FakeServerLedgerEntry>(idempotencyWindowMs);

  return {
    charge(providerKey, body, fingerprint, declined, charged = body.amountMinor) {
      const at = now();
      const hit = remembered.recall(providerKey, at);
      if (hit) {
        return hit.fingerprint === fingerprint
          ? { kind: 'replayed', entry: hit.entry }
          : { kind: 'keyReused' };
      }
      const entry: FakeServerLedgerEntry = {
        id: `ch_${randomUUID().replaceAll('-', '')}`,
        status: declined ? 'declined' : 'succeeded',
        amountMinor: charged,
        requestedAmountMinor: body.amountMinor,
        currency: body.currency,
        ...(declined ? { declineCode } : {}),
        providerKey,
        customerId: body.customerId,
        createdAt: new Date(at).toISOString(),
        ...(body.description === undefined ? {} : { description: body.description }),
        ...(body.metadata === undefined ? {} : { metadata: { ...body.metadata } }),
        ...(body.capture === false ? { capture: false as const } : {}),
      };
      entries.push(entry);
      byId.set(entry.id, entry);
      remembered.remember(providerKey, { entry, fingerprint, at });
      return { kind: 'created', entry };
    },
    find: (providerKey) => entries.find((entry) => entry.providerKey === providerKey),
    byId: (id) => byId.get(id),
    entries: () => entries.map((entry) => structuredClone(entry)),
    forget: () => remembered.forget(),
  };
}

/** A ledger entry as the provider's API shows a charge. */
export function publicCharge(entry: FakeServerLedgerEntry): ProviderCharge {
  return {
    id: entry.id,
    status: entry.status,
    amountMinor: entry.amountMinor,
    currency: entry.currency,
    ...(entry.declineCode === undefined ? {} : { declineCode: entry.declineCode }),
  };
}
