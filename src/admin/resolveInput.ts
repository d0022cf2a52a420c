import type { ScopedKey } from '../store/keyState.js';
import type { MovementKind } from '../store/movementStore.js';
import {
  inputIssues,
  MAX_TEXT,
  readTarget,
  TARGET_FIELDS,
  type InputIssues,
} from './adminInput.js';
import type { ResolveInput } from './types.js';

/** A charge's resolution, checked. */
export type CheckedChargeResolve = {
  kind: 'charge';
  scoped: ScopedKey;
  outcome: 'succeeded' | 'declined' | 'cancelled';
  providerChargeId: string | null;
  declineCode: string | null;
  actor: string;
  reason: string;
};

/** A refund's or capture's resolution, checked. */
export type CheckedMovementResolve = {
  kind: MovementKind;
  scoped: ScopedKey;
  outcome: 'succeeded' | 'failed' | 'cancelled';
  providerMovementId: string | null;
  failureCode: string | null;
  actor: string;
  reason: string;
};

export type CheckedResolve = CheckedChargeResolve | CheckedMovementResolve;

const CHARGE_OUTCOMES = ['succeeded', 'declined', 'cancelled'] as const;
const MOVEMENT_OUTCOMES = ['succeeded', 'failed', 'cancelled'] as const;

/** The provider id field of each kind of key, as its outcome names it. */
const PROVIDER_ID_FIELD = {
  charge: 'providerChargeId',
  refund: 'providerRefundId',
  capture: 'providerCaptureId',
} as const;

/** The code field of a kind's unhappy answer, and the outcome it goes with. */
const CODE_FIELD = {
  charge: { field: 'declineCode', outcome: 'declined' },
  refund: { field: 'failureCode', outcome: 'failed' },
  capture: { field: 'failureCode', outcome: 'failed' },
} as const;

type Kind = keyof typeof PROVIDER_ID_FIELD;

/**
 * Checks a resolve's input before anything is read or written: the key, the outcome among the
 * kind's own (a charge's `declined` is a refund's or capture's `failed`), the provider's id of
 * the kind (required for an answer the provider gave, refused for `cancelled`), its code (for
 * the unhappy answer only), who and why. A field of another kind is refused, not ignored: a
 * person who wrote `providerChargeId` on a refund key meant something else.
 *
 * @throws {InvalidRequestError} naming every bad field.
 */
export function readResolveInput(input: ResolveInput, defaultOperation: string): CheckedResolve {
  const issues = inputIssues();
  const scoped = readTarget(issues, input, defaultOperation);
  issues.onlyKnown(input, RESOLVE_FIELDS);
  const i = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const kind: Kind =
    scoped.operation === 'refund' || scoped.operation === 'capture' ? scoped.operation : 'charge';
  const outcomes: readonly string[] = kind === 'charge' ? CHARGE_OUTCOMES : MOVEMENT_OUTCOMES;
  const outcome = i.outcome;
  if (typeof outcome !== 'string' || !outcomes.includes(outcome)) {
    issues.add('outcome', `must be one of ${outcomes.join(', ')} for a ${kind}`);
  }
  const idField = PROVIDER_ID_FIELD[kind];
  const code = CODE_FIELD[kind];
  if (outcome === 'cancelled') {
    if (i[idField] !== undefined) {
      issues.add(idField, `is for succeeded and ${code.outcome}: a cancelled ${kind} has none`);
    }
  } else if (typeof outcome === 'string' && outcomes.includes(outcome)) {
    // The stored body carries the provider's id, as the engine's does.
    issues.exactText(idField, i[idField], MAX_TEXT.id, true);
  }
  if (i[code.field] !== undefined) {
    if (outcome === code.outcome) issues.exactText(code.field, i[code.field], MAX_TEXT.id, false);
    else issues.add(code.field, `is for ${code.outcome} only`);
  }
  refuseOtherKinds(issues, i, kind);
  issues.text('actor', i.actor, MAX_TEXT.actor, true);
  issues.text('reason', i.reason, MAX_TEXT.reason, true);
  issues.done();
  const answered = outcome !== 'cancelled';
  const person = { scoped, actor: i.actor as string, reason: i.reason as string };
  if (kind === 'charge') {
    return {
      kind,
      ...person,
      outcome: outcome as CheckedChargeResolve['outcome'],
      providerChargeId: answered ? (i.providerChargeId as string) : null,
      declineCode: outcome === 'declined' ? ((i.declineCode as string | undefined) ?? null) : null,
    };
  }
  return {
    kind,
    ...person,
    outcome: outcome as CheckedMovementResolve['outcome'],
    providerMovementId: answered ? (i[idField] as string) : null,
    failureCode: outcome === 'failed' ? ((i.failureCode as string | undefined) ?? null) : null,
  };
}

/** Which kinds of key each field is for. */
const FIELD_KINDS: Record<string, readonly Kind[]> = {
  providerChargeId: ['charge'],
  declineCode: ['charge'],
  providerRefundId: ['refund'],
  providerCaptureId: ['capture'],
  failureCode: ['refund', 'capture'],
};

/** Every field a resolve of some kind of key takes. */
const RESOLVE_FIELDS: ReadonlySet<string> = new Set([
  ...TARGET_FIELDS,
  'outcome',
  'actor',
  'reason',
  ...Object.keys(FIELD_KINDS),
]);

function refuseOtherKinds(issues: InputIssues, i: Record<string, unknown>, kind: Kind): void {
  for (const [field, kinds] of Object.entries(FIELD_KINDS)) {
    if (i[field] === undefined || kinds.includes(kind)) continue;
    const keys = kinds.map((k) => (k === 'charge' ? 'a charge key' : `operation '${k}'`));
    issues.add(field, `is for ${keys.join(' or ')}, not a ${kind} key`);
  }
}
