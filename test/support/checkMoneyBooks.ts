import { REFUSED_ANSWER_REASON_PREFIX } from '../../src/engine/checkProviderAnswer.js';
import type { FakeLedgerEntry } from '../../src/provider/createFakeProvider.js';
import type { FakeCaptureEntry, FakeRefundEntry } from '../../src/provider/createMovementBooks.js';
import type { StoreBooks, StoredCharge, StoredKey, StoredMovement } from './readStoreBooks.js';
import { groupBy } from '../../src/chaos/groupBy.js';

/** What a fake provider recorded: every charge, refund and capture, duplicates included. */
export type ProviderBooks = {
  charges: readonly FakeLedgerEntry[];
  refunds: readonly FakeRefundEntry[];
  captures: readonly FakeCaptureEntry[];
};

/** A response a client received for a key. */
export type SeenResponse = { operation: string; key: string; body: string };

export type MoneyViolationKind =
  | 'unfinished_key'
  | 'wrongly_parked'
  | 'missing_record'
  | 'response_mismatch'
  | 'replay_mismatch'
  | 'double_charge'
  | 'lost_charge'
  | 'phantom_charge'
  | 'charge_mismatch'
  | 'double_movement'
  | 'lost_movement'
  | 'movement_mismatch'
  | 'captured_twice'
  | 'over_capture'
  | 'over_refund'
  | 'totals_mismatch'
  | 'reservation_held';

export type MoneyViolation = { kind: MoneyViolationKind; detail: string };

/** What {@link checkMoneyBooks} is given: both sides, and what clients were told. */
export type MoneyBooksInput = {
  provider: ProviderBooks;
  store: StoreBooks;
  /** Every response a client received. */
  seen: readonly SeenResponse[];
  /** Keys (`operation:key`) whose client was told the key needs a person. */
  toldParked: ReadonlySet<string>;
};

/** The id a key is known by in `toldParked`. */
export const keyId = (operation: string, key: string) => `${operation}:${key}`;

/**
 * Checks a settled merchant's tables against the provider's books, written apart from the
 * engine and from the chaos reconciler so that it can catch what they miss:
 *
 * - every key completed, or parked because the engine refused an answer the provider really
 *   gave (and only such keys were reported as needing a person);
 * - every response a client received is the stored one, and says what the rows say;
 * - each charge key charged at most once, every provider charge recorded, every recorded
 *   charge made by the provider as recorded;
 * - per provider charge: refunds ≤ captured ≤ authorization, an authorization captured at most
 *   once;
 * - each refund or capture provider key moved money at most once, and has a local movement;
 * - each stored movement outcome agrees with the provider (succeeded and failed: its answer;
 *   refused and cancelled: nothing under its key);
 * - each charge row's refunded and captured totals are the provider's, and it holds nothing
 *   but what parked movements still hold.
 */
export function checkMoneyBooks(input: MoneyBooksInput): MoneyViolation[] {
  const found: MoneyViolation[] = [];
  const flag = (kind: MoneyViolationKind, detail: string) => found.push({ kind, detail });
  const { provider, store } = input;
  const chargesById = new Map(store.charges.map((c) => [c.id, c]));
  const movementsById = new Map(store.movements.map((m) => [m.id, m]));
  const providerCharges = groupBy(provider.charges, (e) => e.providerKey);
  const made = {
    refund: groupBy(provider.refunds, (e) => e.providerKey),
    capture: groupBy(provider.captures, (e) => e.providerKey),
  };
  const madeUnder = (operation: string, providerKey: string): number =>
    operation === 'charge'
      ? (providerCharges.get(providerKey)?.length ?? 0)
      : operation === 'refund' || operation === 'capture'
        ? (made[operation].get(providerKey)?.length ?? 0)
        : 0;

  // Keys: finished, or parked for an answer the engine had to refuse; what clients saw.
  const parked = new Set<string>();
  for (const key of store.keys) {
    const subject: StoredCharge | StoredMovement | undefined =
      key.operation === 'charge'
        ? chargesById.get(key.subjectId)
        : movementsById.get(key.subjectId);
    const name = keyId(key.operation, key.key);
    const isParked =
      key.recoveryPoint === 'failed' &&
      subject !== undefined &&
      (key.lastError ?? '').startsWith(REFUSED_ANSWER_REASON_PREFIX) &&
      madeUnder(key.operation, subject.providerKey) > 0;
    if (isParked) parked.add(subject.providerKey);
    else if (key.recoveryPoint !== 'completed') {
      flag('unfinished_key', `${name} at ${key.recoveryPoint} (${key.lastError ?? 'no error'})`);
    }
    if (input.toldParked.has(name) && !isParked) {
      flag('wrongly_parked', `${name}: its client was told it needs a person; it is not parked`);
    }
    if (key.recoveryPoint === 'completed') {
      if (subject) checkResponse(key, subject, flag);
      else flag('missing_record', `${name} completed with no ${key.operation} ${key.subjectId}`);
    }
  }
  const stored = new Map(store.keys.map((k) => [keyId(k.operation, k.key), k]));
  for (const seen of input.seen) {
    const key = stored.get(keyId(seen.operation, seen.key));
    if (key?.responseBody !== seen.body) {
      flag(
        'replay_mismatch',
        `${keyId(seen.operation, seen.key)}: a client saw ${seen.body.slice(0, 100)}; stored ${key?.responseBody?.slice(0, 100) ?? 'nothing'}`,
      );
    }
  }

  // Charges: one per key at the provider, each recorded as the provider made it.
  const localByProviderKey = new Map(store.charges.map((c) => [c.providerKey, c]));
  for (const [providerKey, entries] of providerCharges) {
    if (entries.length > 1) {
      flag('double_charge', `${providerKey}: ${entries.map((e) => e.id).join(', ')}`);
    }
    const local = localByProviderKey.get(providerKey);
    const first = entries[0] as FakeLedgerEntry;
    if (!local) {
      flag('lost_charge', `${first.id} under ${providerKey}: no local charge`);
      continue;
    }
    if (parked.has(providerKey)) continue;
    if (
      local.providerChargeId !== first.id ||
      local.status !== first.status ||
      local.amountMinor !== first.amountMinor ||
      local.authorizedOnly !== (first.capture === false)
    ) {
      flag(
        'charge_mismatch',
        `${local.id}: stored ${local.status} ${local.amountMinor} (${local.providerChargeId ?? 'no id'}); the provider ${first.status} ${first.amountMinor} (${first.id})`,
      );
    }
  }
  for (const local of store.charges) {
    if (parked.has(local.providerKey)) continue;
    const entries = providerCharges.get(local.providerKey) ?? [];
    if (local.status === 'succeeded' || local.status === 'declined') {
      if (!entries.some((e) => e.id === local.providerChargeId && e.status === local.status)) {
        flag(
          'phantom_charge',
          `${local.id}: stored ${local.status}, the provider has no such charge`,
        );
      }
    } else if (local.status !== 'cancelled' || entries.length > 0) {
      flag(
        'charge_mismatch',
        `${local.id}: stored ${local.status}; the provider made ${entries.length}`,
      );
    }
  }

  // The provider's own books of each charge it made.
  for (const charge of provider.charges) {
    const authorizedOnly = charge.capture === false;
    const captures = provider.captures.filter(
      (e) => e.providerChargeId === charge.id && e.status === 'succeeded',
    );
    const refunded = sum(
      provider.refunds.filter((e) => e.providerChargeId === charge.id && e.status === 'succeeded'),
    );
    const capturable = authorizedOnly && charge.status === 'succeeded' ? 1 : 0;
    if (captures.length > capturable) {
      flag('captured_twice', `${charge.id}: ${captures.map((e) => e.id).join(', ')}`);
    }
    const captured = authorizedOnly
      ? sum(captures)
      : charge.status === 'succeeded'
        ? charge.amountMinor
        : 0;
    if (captured > charge.amountMinor) {
      flag('over_capture', `${charge.id}: captured ${captured} of ${charge.amountMinor}`);
    }
    if (refunded > captured) {
      flag('over_refund', `${charge.id}: refunded ${refunded} of ${captured} captured`);
    }
  }

  // Movements: at most one per provider key, each recorded, each stored outcome the provider's.
  const localMovementKeys = new Set(store.movements.map((m) => `${m.kind}:${m.providerKey}`));
  for (const kind of ['refund', 'capture'] as const) {
    for (const [providerKey, entries] of made[kind]) {
      if (entries.length > 1) {
        flag(
          'double_movement',
          `${kind} ${providerKey}: ${entries.map((e) => `${e.status} ${e.amountMinor}`).join(', ')}`,
        );
      }
      if (!localMovementKeys.has(`${kind}:${providerKey}`)) {
        flag('lost_movement', `${kind} ${providerKey}: no local ${kind}`);
      }
    }
  }
  for (const m of store.movements) {
    if (parked.has(m.providerKey)) continue;
    const entries = made[m.kind].get(m.providerKey) ?? [];
    const only = entries.length === 1 ? entries[0] : undefined;
    const agrees =
      m.status === 'succeeded'
        ? only?.status === 'succeeded' &&
          only.id === m.providerMovementId &&
          only.amountMinor === m.amountMinor &&
          only.providerChargeId === m.providerChargeId
        : m.status === 'failed'
          ? only?.status === 'failed' && only.id === m.providerMovementId
          : (m.status === 'refused' || m.status === 'cancelled') && entries.length === 0;
    if (!agrees) {
      flag(
        'movement_mismatch',
        `${m.kind} ${m.id}: stored ${m.status} ${m.amountMinor ?? '-'} (${m.providerMovementId ?? 'no id'}); the provider has ${entries.map((e) => `${e.status} ${e.amountMinor} (${e.id})`).join(', ') || 'nothing'}`,
      );
    }
  }

  // Each charge row's totals are the provider's; it holds only what parked movements hold.
  for (const charge of store.charges) {
    if (parked.has(charge.providerKey)) continue;
    const counted = <E extends { providerChargeId: string; providerKey: string; status: string }>(
      entries: readonly E[],
    ) =>
      entries.filter(
        (e) =>
          e.providerChargeId === charge.providerChargeId &&
          e.status === 'succeeded' &&
          !parked.has(e.providerKey),
      );
    const refunded = sum(counted(provider.refunds));
    const captures = counted(provider.captures);
    const captured = charge.authorizedOnly && captures.length > 0 ? sum(captures) : null;
    if (charge.refundedMinor !== refunded || charge.capturedMinor !== captured) {
      flag(
        'totals_mismatch',
        `${charge.id}: refunded ${charge.refundedMinor}, captured ${charge.capturedMinor ?? 'nothing'}; the provider ${refunded}, ${captured ?? 'nothing'}`,
      );
    }
    const held = store.movements.filter(
      (m) => m.chargeId === charge.id && m.status === 'reserved' && parked.has(m.providerKey),
    );
    const refundHeld = sum(held.filter((m) => m.kind === 'refund').map(amountOf));
    const captureHeld = held.find((m) => m.kind === 'capture')?.amountMinor ?? null;
    if (charge.refundReservedMinor !== refundHeld || charge.captureReservedMinor !== captureHeld) {
      flag(
        'reservation_held',
        `${charge.id}: holds ${charge.refundReservedMinor} for refunds and ${charge.captureReservedMinor ?? 'nothing'} for a capture; parked movements hold ${refundHeld} and ${captureHeld ?? 'nothing'}`,
      );
    }
  }
  return found;
}

/** A completed key's stored response says what its row says. */
function checkResponse(
  key: StoredKey,
  subject: StoredCharge | StoredMovement,
  flag: (kind: MoneyViolationKind, detail: string) => void,
): void {
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(key.responseBody ?? '') as Record<string, unknown>;
  } catch {
    // An unreadable body disagrees with every row: reported below.
  }
  const providerId =
    key.operation === 'charge'
      ? body.providerChargeId
      : key.operation === 'refund'
        ? body.providerRefundId
        : body.providerCaptureId;
  const subjectProviderId =
    'providerMovementId' in subject ? subject.providerMovementId : subject.providerChargeId;
  if (
    body.id !== subject.id ||
    body.status !== subject.status ||
    providerId !== subjectProviderId
  ) {
    flag(
      'response_mismatch',
      `${keyId(key.operation, key.key)}: stored response ${key.responseBody?.slice(0, 100) ?? 'none'}; the row says ${subject.status} (${subjectProviderId ?? 'no id'})`,
    );
  }
}

function amountOf(m: StoredMovement): number {
  return m.amountMinor ?? 0;
}

function sum(entries: ReadonlyArray<{ amountMinor: number } | number>): number {
  return entries.reduce<number>(
    (total, e) => total + (typeof e === 'number' ? e : e.amountMinor),
    0,
  );
}
