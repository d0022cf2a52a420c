import { resolvePool, type PoolInput } from '../store/resolvePool.js';
import { HTTP_STATUS } from '../engine/chargeBody.js';
import { REFUSED_ANSWER_REASON_PREFIX } from '../engine/checkProviderAnswer.js';
import { checkAnswers } from './checkAnswers.js';
import { readLedgerRows, type LocalChargeRow } from '../store/readLedgerRows.js';
import { withStore } from '../store/storeErrors.js';
import { DEFAULT_SCHEMA, tablesIn } from '../store/tables.js';
import { readMovementRows } from '../store/readMovementRows.js';
import {
  checkMovements,
  type MovementLedger,
  type MovementViolation,
} from './reconcileMovements.js';

export type {
  MovementLedger,
  MovementViolation,
  ProviderMovementEntry,
} from './reconcileMovements.js';
import { groupBy } from './groupBy.js';

/** One charge the provider really made. */
export type ProviderLedgerEntry = {
  id: string;
  providerKey: string;
  status: 'succeeded' | 'declined';
  amountMinor: number;
  currency: string;
  /** `false`: authorized only, captured later (or never). */
  capture?: false;
  /**
   * The amount the provider was asked for, when its records keep it (the fake provider's do):
   * a charge of another amount is then the provider's doing only if the ask was right.
   */
  requestedAmountMinor?: number;
};

/** A response a client received, to check replays against. */
export type ObservedResponse = { merchantId: string; key: string; body: string };

/** Everything that can be wrong between the engine's tables and the provider's records. */
export type Violation =
  | { kind: 'double_charge'; providerKey: string; providerChargeIds: string[] }
  | { kind: 'lost_charge'; providerKey: string; providerChargeId: string; detail: string }
  | { kind: 'phantom_charge'; merchantId: string; chargeId: string; detail: string }
  | { kind: 'amount_mismatch'; merchantId: string; chargeId: string; detail: string }
  | { kind: 'outcome_mismatch'; merchantId: string; key: string | null; detail: string }
  | { kind: 'unfinished_key'; merchantId: string; key: string; recoveryPoint: string }
  | { kind: 'duplicate_outcome'; merchantId: string; key: string; chargeIds: string[] }
  | { kind: 'replay_mismatch'; merchantId: string; key: string; detail: string }
  | MovementViolation;

/** A key the engine parked because the provider's answer could not be recorded: not a violation. */
export type ParkedKey = { merchantId: string; key: string; chargeId: string; reason: string };

/** What {@link reconcile} found. Empty `violations`: exactly one charge per key, nothing lost. */
export type ReconcileReport = {
  violations: Violation[];
  /**
   * Keys parked in `failed` because the provider answered with a charge that does not match the
   * request, or an answer that does not fit the port: the engine refused to record it, as it
   * must, and left it to a person. Every other parked key is an `unfinished_key` violation.
   */
  parked: ParkedKey[];
  checked: {
    providerCharges: number;
    localCharges: number;
    observations: number;
    /** Refunds and captures in `movementLedger`, and local ones: only with `movementLedger`. */
    providerMovements?: number;
    localMovements?: number;
  };
};

/** Options of {@link reconcile}. */
export type ReconcileOptions = {
  /** A connection string, a node-postgres pool or a slonik pool. */
  pool: PoolInput;
  /** @defaultValue `'chargeonce'` */
  schema?: string;
  /** Every charge the provider made, duplicates included. */
  providerLedger: readonly ProviderLedgerEntry[];
  /** Only these merchants' rows (tests that share a database); all when absent. */
  merchantIds?: readonly string[];
  /**
   * With `merchantIds`: every charge in `providerLedger` belongs to these merchants (a provider
   * of the run's own), so one with no local charge is a lost charge rather than someone else's.
   * @defaultValue `false`
   */
  ledgerIsOnlyTheirs?: boolean;
  /**
   * Set once every lease has run out and a sweep has run: then any key not `completed` is a
   * violation (something was left half-done).
   * @defaultValue `false`
   */
  expectFinished?: boolean;
  /** Responses clients received: each must be byte for byte the stored one. */
  observations?: readonly ObservedResponse[];
  /**
   * Every refund and capture the provider recorded. When given, the refunds and captures of the
   * engine's tables are checked against it too, per key and per charge (see `checkMovements`):
   * provider refunds ≤ provider capture ≤ authorization, one capture per authorization, one
   * provider refund or capture per key, stored outcomes and each charge's totals agreeing with
   * the provider, and (with `expectFinished`) no reservation left held.
   */
  movementLedger?: MovementLedger;
};

/**
 * Reads the engine's tables and the provider's records and reports every violation of
 * "exactly one provider charge per key, nothing lost": double charges, provider charges with no
 * local record or recorded as not charged, local successes the provider never made, amounts or
 * currencies that differ, stored outcomes that disagree with the provider, unfinished keys, and
 * replayed bodies that differ from the stored one. With `movementLedger`, the same for refunds
 * and captures, and the money invariants of each charge.
 *
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function reconcile(options: ReconcileOptions): Promise<ReconcileReport> {
  const tables = tablesIn(options.schema ?? DEFAULT_SCHEMA);
  const { charges, keysWithoutCharge, money } = await withStore(async () => {
    const pools = await resolvePool(options.pool);
    try {
      const merchantIds = options.merchantIds ?? null;
      const rows = await readLedgerRows(pools.slonik, tables, merchantIds);
      const moved = options.movementLedger
        ? await readMovementRows(pools.slonik, tables, merchantIds)
        : null;
      return { ...rows, money: moved };
    } finally {
      await pools.end();
    }
  });
  const violations: Violation[] = [];
  const byProviderKey = groupBy(options.providerLedger, (e) => e.providerKey);
  const localByProviderKey = new Map(charges.map((c) => [c.providerKey, c]));
  const merchants = options.merchantIds ? new Set(options.merchantIds) : null;
  const refused = (local: LocalChargeRow) => isRefusedAnswer(local, byProviderKey);

  for (const [providerKey, made] of byProviderKey) {
    if (made.length > 1) {
      violations.push({
        kind: 'double_charge',
        providerKey,
        providerChargeIds: made.map((m) => m.id),
      });
    }
    const local = localByProviderKey.get(providerKey);
    const first = made[0] as ProviderLedgerEntry;
    if (!local) {
      // With a merchant filter, another merchant's charge is not ours to judge, unless the
      // ledger is known to hold only these merchants' charges.
      if (!merchants || options.ledgerIsOnlyTheirs) {
        violations.push({
          kind: 'lost_charge',
          providerKey,
          providerChargeId: first.id,
          detail: 'the provider charged under a key with no local charge',
        });
      }
      continue;
    }
    if (!refused(local)) checkAgainstProvider(local, made, violations);
  }

  for (const local of charges) {
    if (refused(local)) continue;
    const made = byProviderKey.get(local.providerKey);
    if (!made && (local.status === 'succeeded' || local.status === 'declined')) {
      violations.push({
        kind: 'phantom_charge',
        merchantId: local.merchantId,
        chargeId: local.chargeId,
        detail: `recorded ${local.status} with provider charge ${local.providerChargeId ?? 'none'}, which the provider never made`,
      });
    }
    checkStoredResponse(local, violations);
    if (options.expectFinished && local.key !== null && !isFinished(local.recoveryPoint)) {
      violations.push({
        kind: 'unfinished_key',
        merchantId: local.merchantId,
        key: local.key,
        recoveryPoint: local.recoveryPoint ?? 'unknown',
      });
    }
  }
  if (options.expectFinished) {
    for (const key of keysWithoutCharge) {
      if (isFinished(key.recovery_point)) continue;
      // A refund's or capture's key guards a movement, judged with it below.
      if (money && isMovementOperation(key.operation)) continue;
      violations.push({
        kind: 'unfinished_key',
        merchantId: key.merchant_id,
        key: key.key,
        recoveryPoint: key.recovery_point,
      });
    }
  }

  const stored = new Map(
    charges.filter((c) => c.key !== null).map((c) => [`${c.merchantId}\u0000${c.key}`, c]),
  );
  violations.push(
    ...checkAnswers(
      options.observations ?? [],
      (merchantId, key) => stored.get(`${merchantId}\u0000${key}`)?.responseBody,
    ),
  );

  violations.push(...duplicateOutcomes(options.observations ?? []));

  const parked: ParkedKey[] = charges.filter(refused).map((c) => ({
    merchantId: c.merchantId,
    key: c.key as string,
    chargeId: c.chargeId,
    reason: c.lastError ?? '',
  }));
  if (money && options.movementLedger) {
    const moved = checkMovements({
      ...money,
      providerCharges: new Map(options.providerLedger.map((e) => [e.id, e])),
      ledger: options.movementLedger,
      ledgerIsOnlyTheirs: !merchants || options.ledgerIsOnlyTheirs === true,
      expectFinished: options.expectFinished === true,
      observations: options.observations ?? [],
    });
    violations.push(...moved.violations);
    parked.push(...moved.parked);
  }

  return {
    violations,
    parked,
    checked: {
      providerCharges: options.providerLedger.length,
      localCharges: charges.length,
      observations: options.observations?.length ?? 0,
      ...(money && options.movementLedger
        ? {
            providerMovements:
              options.movementLedger.refunds.length + options.movementLedger.captures.length,
            localMovements: money.movements.length,
          }
        : {}),
    },
  };
}

function isMovementOperation(operation: string): boolean {
  return operation === 'refund' || operation === 'capture';
}

/** Completed, or completed and reaped to a tombstone. */
function isFinished(recoveryPoint: string | null): boolean {
  return recoveryPoint === 'completed' || recoveryPoint === 'expired';
}

/**
 * Parked by the engine because it refused the provider's answer (see `ParkedKey`), and rightly:
 * a refusal for the amount or currency must match what the provider's records say it charged.
 * (A malformed answer or a charge id given twice leaves no trace in the records to check.)
 */
function isRefusedAnswer(
  local: LocalChargeRow,
  byProviderKey: ReadonlyMap<string, readonly ProviderLedgerEntry[]>,
): boolean {
  const reason = local.lastError ?? '';
  if (local.recoveryPoint !== 'failed' || !reason.startsWith(REFUSED_ANSWER_REASON_PREFIX)) {
    return false;
  }
  if (/malformed|already recorded/.test(reason)) return true;
  const first = byProviderKey.get(local.providerKey)?.[0];
  // Asked for another amount than the request's: the engine's doing, never excused.
  if (
    first?.requestedAmountMinor !== undefined &&
    first.requestedAmountMinor !== local.amountMinor
  ) {
    return false;
  }
  return (
    first !== undefined &&
    (first.amountMinor !== local.amountMinor || first.currency !== local.currency)
  );
}

/**
 * One key, one charge: clients that saw outcomes of two different charges under the same key
 * were charged twice for one operation (a retry after the key was forgotten, say), even when
 * each charge has a provider key of its own.
 */
function duplicateOutcomes(observations: readonly ObservedResponse[]): Violation[] {
  const idsByKey = new Map<string, { merchantId: string; key: string; ids: Set<string> }>();
  for (const seen of observations) {
    let id: unknown;
    try {
      id = (JSON.parse(seen.body) as { id?: unknown }).id;
    } catch {
      continue; // a hook's own rejection body: not the engine's to judge
    }
    if (typeof id !== 'string') continue;
    const slot = `${seen.merchantId}\u0000${seen.key}`;
    const entry = idsByKey.get(slot) ?? {
      merchantId: seen.merchantId,
      key: seen.key,
      ids: new Set(),
    };
    entry.ids.add(id);
    idsByKey.set(slot, entry);
  }
  return [...idsByKey.values()]
    .filter((e) => e.ids.size > 1)
    .map((e) => ({
      kind: 'duplicate_outcome' as const,
      merchantId: e.merchantId,
      key: e.key,
      chargeIds: [...e.ids],
    }));
}

function checkAgainstProvider(
  local: LocalChargeRow,
  made: readonly ProviderLedgerEntry[],
  violations: Violation[],
): void {
  const first = made[0] as ProviderLedgerEntry;
  if (first.amountMinor !== local.amountMinor || first.currency !== local.currency) {
    violations.push({
      kind: 'amount_mismatch',
      merchantId: local.merchantId,
      chargeId: local.chargeId,
      detail: `local ${local.amountMinor} ${local.currency}, provider ${first.amountMinor} ${first.currency}`,
    });
  }
  if (local.status === 'cancelled' || local.status === 'rejected') {
    violations.push({
      kind: 'lost_charge',
      providerKey: local.providerKey,
      providerChargeId: first.id,
      detail: `the provider charged, but the charge is recorded as ${local.status}`,
    });
    return;
  }
  if (local.status !== 'succeeded' && local.status !== 'declined') {
    // Still reserved: fine while its key is there to finish it (an unfinished key is judged on
    // its own). With no key (released, or its slot claimed again for another charge), nothing
    // will ever complete it: the provider's charge is lost to the books, and a retry that found
    // the key gone charged again under a provider key of its own.
    if (local.key === null) {
      violations.push({
        kind: 'lost_charge',
        providerKey: local.providerKey,
        providerChargeId: first.id,
        detail: 'the provider charged, but the charge is still reserved and no key guards it',
      });
    }
    return;
  }
  const adopted = made.find((m) => m.id === local.providerChargeId);
  if (!adopted || adopted.status !== local.status) {
    violations.push({
      kind: 'outcome_mismatch',
      merchantId: local.merchantId,
      key: local.key,
      detail: `recorded ${local.status} (${local.providerChargeId ?? 'no id'}); provider has ${made
        .map((m) => `${m.status} (${m.id})`)
        .join(', ')}`,
    });
  }
}

function checkStoredResponse(local: LocalChargeRow, violations: Violation[]): void {
  if (local.recoveryPoint !== 'completed' || local.responseBody === null) return;
  if (local.status === 'rejected') return; // the hook chose its own status and body
  const expectedStatus = HTTP_STATUS[local.status as keyof typeof HTTP_STATUS];
  let body: { status?: unknown; providerChargeId?: unknown } = {};
  try {
    body = JSON.parse(local.responseBody) as typeof body;
  } catch {
    // Reported below: the body is not what the engine writes.
  }
  if (
    local.responseStatus !== expectedStatus ||
    body.status !== local.status ||
    body.providerChargeId !== local.providerChargeId
  ) {
    violations.push({
      kind: 'outcome_mismatch',
      merchantId: local.merchantId,
      key: local.key,
      detail: `stored response ${local.responseStatus} ${local.responseBody.slice(0, 120)} disagrees with charge ${local.status} (${local.providerChargeId ?? 'no id'})`,
    });
  }
}
