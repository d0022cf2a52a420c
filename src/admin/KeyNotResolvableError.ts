import { ChargeOnceError } from '../errors.js';
import type { RecoveryPoint } from '../store/keyState.js';
import { nameErrorKind } from '../errorKinds.js';

/**
 * Why a key cannot be resolved: there is no such key; its outcome is final (`completed`, or a
 * tombstone); it is not parked (an attempt or the sweeper is on it: resolve only what waits for
 * a person); or it was parked before its charge intent was written (nothing can have been
 * charged: requeue it instead); or its stored request cannot be read by this version, so the
 * outcome's body cannot be written as the engine writes it; or it is a refund or capture that
 * holds no reservation on its charge (refused before the provider was asked: requeue it, and its
 * refusal is stored), so there is nothing for a person to settle.
 */
export type NotResolvableReason =
  | 'no_such_key'
  | 'completed'
  | 'not_parked'
  | 'no_charge_intent'
  | 'request_unreadable'
  | 'nothing_reserved';

const MESSAGES: Record<NotResolvableReason, string> = {
  no_such_key: 'There is no such key.',
  completed: 'The key is completed: its outcome is final and is never changed.',
  not_parked:
    'The key is not parked in failed: an attempt or the sweeper finishes it. Only a parked key is resolved by hand.',
  no_charge_intent:
    'The key was parked before its charge intent was written, so nothing was charged under it: requeue it instead.',
  request_unreadable:
    "The key's stored request cannot be read by this version of chargeonce, so its outcome cannot be written.",
  nothing_reserved:
    'The refund or capture holds no reservation on its charge, so there is nothing to settle by hand: requeue it instead.',
};

/**
 * `resolve` was refused: the key is not parked in `failed` (or cannot be finished by hand).
 * Nothing was written. A second resolve, or one that lost a race to another resolve or a requeue,
 * gets this too, with the point the key had moved to.
 */
export class KeyNotResolvableError extends ChargeOnceError {
  /** Why, as a stable value. */
  readonly reason: NotResolvableReason;
  /** Where the key was when refused; null when there is no such key. */
  readonly recoveryPoint: RecoveryPoint | null;

  constructor(
    reason: NotResolvableReason,
    recoveryPoint: RecoveryPoint | null,
    options?: { cause?: unknown },
  ) {
    const at = recoveryPoint === null ? '' : ` (recovery point: ${recoveryPoint})`;
    super('key_not_resolvable', 409, `${MESSAGES[reason]}${at}`, options);
    this.reason = reason;
    this.recoveryPoint = recoveryPoint;
  }
}

nameErrorKind(KeyNotResolvableError, 'KeyNotResolvableError');
