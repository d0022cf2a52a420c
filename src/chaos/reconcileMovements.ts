import { checkAnswers } from './checkAnswers.js';
import { REFUSED_ANSWER_REASON_PREFIX } from '../engine/checkProviderAnswer.js';
import { MOVEMENT_HTTP_STATUS } from '../engine/movementDefinitions.js';
import type { MovementStatus } from '../engine/movementTypes.js';
import type { ChargeTotalsRow, LocalMovementRow } from '../store/readMovementRows.js';
import { groupBy } from './groupBy.js';

/** One refund or capture the provider recorded, refused (`failed`) ones included. */
export type ProviderMovementEntry = {
  id: string;
  providerKey: string;
  /** The provider's id of the charge it was on. */
  providerChargeId: string;
  status: 'succeeded' | 'failed';
  amountMinor: number;
  currency: string;
};

/** Every refund and capture the provider recorded, duplicates included. */
export type MovementLedger = {
  refunds: readonly ProviderMovementEntry[];
  captures: readonly ProviderMovementEntry[];
};

type Kind = 'refund' | 'capture';

/**
 * What can be wrong with the money moved on a charge: at the provider (more refunded than
 * captured, more captured than authorized, an authorization captured twice, a key that moved
 * money twice, a movement with no local record), or between the provider and chargeonce's tables
 * (a stored outcome the provider disagrees with, a charge's totals that differ from the
 * provider's, a reservation still held once everything settled).
 */
export type MovementViolation =
  | { kind: 'double_movement'; movement: Kind; providerKey: string; providerIds: string[] }
  | {
      kind: 'lost_movement';
      movement: Kind;
      providerKey: string;
      providerId: string;
      detail: string;
    }
  | { kind: 'captured_twice'; providerChargeId: string; captureIds: string[] }
  | { kind: 'over_capture'; providerChargeId: string; detail: string }
  | { kind: 'over_refund'; providerChargeId: string; detail: string }
  | {
      kind: 'movement_mismatch';
      merchantId: string;
      movement: Kind;
      key: string | null;
      movementId: string;
      detail: string;
    }
  | { kind: 'totals_mismatch'; merchantId: string; chargeId: string; detail: string }
  | { kind: 'reservation_held'; merchantId: string; chargeId: string; detail: string };

/** The violations the movement checks may also report with the charge checks' own kinds. */
type SharedViolation =
  | { kind: 'unfinished_key'; merchantId: string; key: string; recoveryPoint: string }
  | { kind: 'replay_mismatch'; merchantId: string; key: string; detail: string };

/** Where the checks put what they find. */
type Found = Array<MovementViolation | SharedViolation>;

/** A movement key the engine parked because it refused the provider's answer: not a violation. */
export type ParkedMovement = { merchantId: string; key: string; chargeId: string; reason: string };

/** What the movement checks are given. */
export type MovementCheckInput = {
  charges: readonly ChargeTotalsRow[];
  movements: readonly LocalMovementRow[];
  /** The provider's charges: which were authorized only (`capture: false`), and for how much. */
  providerCharges: ReadonlyMap<
    string,
    { status: string; amountMinor: number; capture?: false | undefined }
  >;
  ledger: MovementLedger;
  /** Every movement in `ledger` belongs to the merchants read: one with no local record is lost. */
  ledgerIsOnlyTheirs: boolean;
  /** Every lease has run out and a sweep has run: nothing may still be reserved. */
  expectFinished: boolean;
  /** Responses clients received, by merchant and key: each must be the stored one. */
  observations: ReadonlyArray<{ merchantId: string; key: string; body: string }>;
};

/**
 * Checks the refunds and captures of the engine's tables against the provider's records, per
 * key and per charge: provider refunds ≤ provider capture ≤ authorization, an authorization
 * captured at most once, at most one provider refund or capture per key, every stored outcome
 * agreeing with the provider (succeeded: it has it, for that amount; failed: it refused it;
 * refused or cancelled: it has nothing under the key), each charge's refunded and captured totals
 * equal to the provider's, and, once settled, no reservation left held. Keys parked because the
 * engine refused the provider's answer are listed apart, and what the provider did under them is
 * left out of the totals (the engine rightly never recorded it).
 */
export function checkMovements(input: MovementCheckInput): {
  violations: Found;
  parked: ParkedMovement[];
} {
  const violations: Found = [];
  const ledgers = { refund: input.ledger.refunds, capture: input.ledger.captures };
  const byKey = {
    refund: groupBy(ledgers.refund, (e) => e.providerKey),
    capture: groupBy(ledgers.capture, (e) => e.providerKey),
  };

  // At most one provider refund or capture per key.
  for (const movement of ['refund', 'capture'] as const) {
    for (const [providerKey, made] of byKey[movement]) {
      if (made.length > 1) {
        violations.push({
          kind: 'double_movement',
          movement,
          providerKey,
          providerIds: made.map((e) => e.id),
        });
      }
    }
  }

  const parkedKeys = new Set<string>();
  const parked: ParkedMovement[] = [];
  const localKeys = new Set<string>();
  for (const m of input.movements) {
    localKeys.add(`${m.kind}\u0000${m.providerKey}`);
    const made = byKey[m.kind].get(m.providerKey) ?? [];
    if (isRefusedAnswer(m, made)) {
      parkedKeys.add(m.providerKey);
      parked.push({
        merchantId: m.merchantId,
        key: m.key ?? '',
        chargeId: m.movementId,
        reason: m.lastError ?? '',
      });
      continue;
    }
    checkMovement(m, made, input.expectFinished, violations);
  }

  // Nothing at the provider that chargeonce has no record of.
  if (input.ledgerIsOnlyTheirs) {
    for (const movement of ['refund', 'capture'] as const) {
      for (const e of ledgers[movement]) {
        if (localKeys.has(`${movement}\u0000${e.providerKey}`)) continue;
        violations.push({
          kind: 'lost_movement',
          movement,
          providerKey: e.providerKey,
          providerId: e.id,
          detail: `the provider recorded a ${e.status} ${movement} of ${e.amountMinor} ${e.currency} on ${e.providerChargeId} under a key with no local ${movement}`,
        });
      }
    }
  }

  const byCharge = {
    refund: groupBy(ledgers.refund, (e) => e.providerChargeId),
    capture: groupBy(ledgers.capture, (e) => e.providerChargeId),
  };
  const localByProviderId = new Map(
    input.charges.flatMap((c) => (c.providerChargeId === null ? [] : [[c.providerChargeId, c]])),
  );
  const providerChargeIds = new Set(localByProviderId.keys());
  if (input.ledgerIsOnlyTheirs) {
    for (const id of byCharge.refund.keys()) providerChargeIds.add(id);
    for (const id of byCharge.capture.keys()) providerChargeIds.add(id);
  }
  for (const providerChargeId of providerChargeIds) {
    checkProviderBooks(
      providerChargeId,
      input.providerCharges.get(providerChargeId),
      localByProviderId.get(providerChargeId),
      byCharge.refund.get(providerChargeId) ?? [],
      byCharge.capture.get(providerChargeId) ?? [],
      violations,
    );
  }

  const movementsOfCharge = groupBy(input.movements, (m) => `${m.merchantId}\u0000${m.chargeId}`);
  for (const charge of input.charges) {
    const own = movementsOfCharge.get(`${charge.merchantId}\u0000${charge.chargeId}`) ?? [];
    const pid = charge.providerChargeId;
    const counted = (entries: readonly ProviderMovementEntry[]) =>
      entries.filter((e) => e.status === 'succeeded' && !parkedKeys.has(e.providerKey));
    if (pid !== null) {
      const refunds = counted(byCharge.refund.get(pid) ?? []);
      checkTotals(charge, refunds, counted(byCharge.capture.get(pid) ?? []), violations);
    }
    checkReservations(charge, own, parkedKeys, input.expectFinished, violations);
  }

  const stored = new Map(
    input.movements.flatMap((m) => (m.key === null ? [] : [[`${m.merchantId}\u0000${m.key}`, m]])),
  );
  violations.push(
    ...checkAnswers(
      input.observations,
      (merchantId, key) => stored.get(`${merchantId}\u0000${key}`)?.responseBody,
    ),
  );

  return { violations, parked };
}

/**
 * Parked because the engine refused the provider's answer, and rightly: malformed, or for an
 * amount or currency the provider's records confirm differ from what was reserved.
 */
function isRefusedAnswer(m: LocalMovementRow, made: readonly ProviderMovementEntry[]): boolean {
  const reason = m.lastError ?? '';
  if (m.recoveryPoint !== 'failed' || !reason.startsWith(REFUSED_ANSWER_REASON_PREFIX)) {
    return false;
  }
  if (/malformed/.test(reason)) return true;
  const first = made[0];
  return (
    first !== undefined && (first.amountMinor !== m.amountMinor || first.currency !== m.currency)
  );
}

/** One movement's stored outcome against what the provider recorded under its key. */
function checkMovement(
  m: LocalMovementRow,
  made: readonly ProviderMovementEntry[],
  expectFinished: boolean,
  violations: Found,
): void {
  const mismatch = (detail: string) =>
    violations.push({
      kind: 'movement_mismatch',
      merchantId: m.merchantId,
      movement: m.kind,
      key: m.key,
      movementId: m.movementId,
      detail,
    });
  const provider = () =>
    made.length === 0
      ? 'the provider has nothing under its key'
      : `the provider has ${made.map((e) => `${e.status} ${e.amountMinor} (${e.id})`).join(', ')}`;
  if (expectFinished && m.key !== null && !isFinished(m.recoveryPoint)) {
    violations.push({
      kind: 'unfinished_key',
      merchantId: m.merchantId,
      key: m.key,
      recoveryPoint: m.recoveryPoint ?? 'unknown',
    });
  }
  const answer = made.find((e) => e.id === m.providerMovementId);
  switch (m.status) {
    case 'succeeded':
      if (!answer || answer.status !== 'succeeded' || answer.amountMinor !== m.amountMinor) {
        mismatch(
          `stored succeeded ${m.amountMinor} (${m.providerMovementId ?? 'no id'}); ${provider()}`,
        );
      }
      break;
    case 'failed':
      if (!answer || answer.status !== 'failed' || made.some((e) => e.status === 'succeeded')) {
        mismatch(`stored failed (${m.providerMovementId ?? 'no id'}); ${provider()}`);
      }
      break;
    case 'refused':
    case 'cancelled':
      if (made.length > 0) mismatch(`stored ${m.status}; ${provider()}`);
      break;
    default:
      // Still reserved: in doubt, which is fine while attempts run (once settled, its key is
      // unfinished, reported above, and its charge still holds the amount).
      return;
  }
  checkStoredResponse(m, mismatch);
}

/** The stored response says what the movement row says (unless a hook wrote its own). */
function checkStoredResponse(m: LocalMovementRow, mismatch: (detail: string) => void): void {
  if (m.recoveryPoint !== 'completed' || m.responseBody === null || m.refusal === 'rejected')
    return;
  const status = m.status as MovementStatus;
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(m.responseBody) as Record<string, unknown>;
  } catch {
    // Reported below: the body is not what the engine writes.
  }
  const providerIdField = m.kind === 'refund' ? 'providerRefundId' : 'providerCaptureId';
  if (
    m.responseStatus !== MOVEMENT_HTTP_STATUS[status] ||
    body.status !== m.status ||
    body.id !== m.movementId ||
    body[providerIdField] !== m.providerMovementId
  ) {
    mismatch(
      `stored response ${m.responseStatus ?? 'none'} ${m.responseBody.slice(0, 120)} disagrees with the ${m.kind} ${m.status} (${m.providerMovementId ?? 'no id'})`,
    );
  }
}

/** The provider's own books of one charge: refunds ≤ capture ≤ authorization, one capture. */
function checkProviderBooks(
  providerChargeId: string,
  charge: { status: string; amountMinor: number; capture?: false | undefined } | undefined,
  local: ChargeTotalsRow | undefined,
  refunds: readonly ProviderMovementEntry[],
  captures: readonly ProviderMovementEntry[],
  violations: Found,
): void {
  const authorizedOnly = charge ? charge.capture === false : local?.authorizedOnly === true;
  const authorized = charge?.amountMinor ?? local?.amountMinor ?? 0;
  const succeeded = captures.filter((e) => e.status === 'succeeded');
  if (succeeded.length > (authorizedOnly ? 1 : 0)) {
    violations.push({
      kind: 'captured_twice',
      providerChargeId,
      captureIds: succeeded.map((e) => e.id),
    });
  }
  const capturedByCaptures = sum(succeeded);
  if (authorizedOnly && capturedByCaptures > authorized) {
    violations.push({
      kind: 'over_capture',
      providerChargeId,
      detail: `captured ${capturedByCaptures} of an authorization of ${authorized}`,
    });
  }
  const charged = charge ? (charge.status === 'succeeded' ? authorized : 0) : authorized;
  const captured = authorizedOnly ? capturedByCaptures : charged;
  const refunded = sum(refunds.filter((e) => e.status === 'succeeded'));
  if (refunded > captured) {
    violations.push({
      kind: 'over_refund',
      providerChargeId,
      detail: `refunded ${refunded} of ${captured} captured (${refunds.length} refunds)`,
    });
  }
}

/** A charge row's totals are the provider's (less what parked keys moved, never recorded). */
function checkTotals(
  charge: ChargeTotalsRow,
  refunds: readonly ProviderMovementEntry[],
  captures: readonly ProviderMovementEntry[],
  violations: Found,
): void {
  const refunded = sum(refunds);
  const captured = captures.length === 0 ? null : sum(captures);
  const problems: string[] = [];
  if (charge.refundedMinor !== refunded) {
    problems.push(`refunded ${charge.refundedMinor}, the provider ${refunded}`);
  }
  if (charge.authorizedOnly && charge.capturedMinor !== captured) {
    problems.push(
      `captured ${charge.capturedMinor ?? 'nothing'}, the provider ${captured ?? 'nothing'}`,
    );
  }
  if (problems.length > 0) {
    violations.push({
      kind: 'totals_mismatch',
      merchantId: charge.merchantId,
      chargeId: charge.chargeId,
      detail: problems.join('; '),
    });
  }
}

/**
 * The amounts a charge row holds are those of its movements still reserved; once settled, only
 * parked ones may still hold anything.
 */
function checkReservations(
  charge: ChargeTotalsRow,
  movements: readonly LocalMovementRow[],
  parkedKeys: ReadonlySet<string>,
  expectFinished: boolean,
  violations: Found,
): void {
  const holding = movements.filter(
    (m) => m.status === 'reserved' && (!expectFinished || parkedKeys.has(m.providerKey)),
  );
  const refund = holding
    .filter((m) => m.kind === 'refund')
    .reduce((total, m) => total + (m.amountMinor ?? 0), 0);
  const capture = holding.find((m) => m.kind === 'capture')?.amountMinor ?? null;
  const problems: string[] = [];
  if (charge.refundReservedMinor !== refund) {
    problems.push(
      `holds ${charge.refundReservedMinor} for refunds, ${expectFinished ? 'parked ' : ''}reserved refunds add up to ${refund}`,
    );
  }
  if (charge.captureReservedMinor !== capture) {
    problems.push(
      `holds ${charge.captureReservedMinor ?? 'nothing'} for a capture, ${expectFinished ? 'a parked ' : 'a '}reserved capture ${capture ?? 'none'}`,
    );
  }
  if (problems.length > 0) {
    violations.push({
      kind: 'reservation_held',
      merchantId: charge.merchantId,
      chargeId: charge.chargeId,
      detail: problems.join('; '),
    });
  }
}

/** Completed, or completed and reaped to a tombstone. */
function isFinished(recoveryPoint: string | null): boolean {
  return recoveryPoint === 'completed' || recoveryPoint === 'expired';
}

function sum(entries: ReadonlyArray<{ amountMinor: number }>): number {
  return entries.reduce((total, e) => total + e.amountMinor, 0);
}
