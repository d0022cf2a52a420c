import type { MovementStatus } from '../engine/movementTypes.js';
import type { ChargeStatus, CrashPoint } from '../engine/types.js';

/** How the retry of a held claim was answered (see `AttemptEvent.heldClaim`). */
export type HeldClaimEnd = 'answered' | 'blocked' | 'otherwise';

/** What a chaos operation does. */
export type OperationKind = 'charge' | 'refund' | 'capture';

/** How one `processCharge`, `processRefund` or `processCapture` call of a chaos client ended. */
export type AttemptEvent = {
  op: number;
  operation: OperationKind;
  merchantId: string;
  key: string;
  /** The attempt was set to stall past its lease somewhere. */
  stalled: boolean;
  /** Its stall suspended its whole process, the monotonic clock stopped (see `suspendHost`). */
  suspended: boolean;
  /** The attempt stepped its process's wall clock first. */
  clockStepped: boolean;
  /** A second submission of the request, sent alongside its first attempt and never retried. */
  duplicate: boolean;
  /** How the attempt's wait on the key in progress ended, if it waited (`inProgress: { waitMs }`). */
  wait: WaitEnd | null;
  /**
   * For a second submission sent while the first attempt's claim was held uncommitted
   * (`ChaosOptions.holdRate`): `answered` with a 409 while it was still held, as it must be;
   * `blocked` only once the hold ended, after waiting on the key; `otherwise` while held, but
   * with something else than a 409 (there is no outcome to give before the holder commits).
   */
  heldClaim?: HeldClaimEnd;
  /**
   * For such a second submission through an engine that refuses keys in progress (rather than
   * waiting on them), `answered` with its 409: how long that took, in milliseconds. The key's lock wait
   * bounds it (`KEY_LOCK_WAIT_MS`); the report shows the slowest, so that a longer wait shows.
   */
  heldRefusalMs?: number;
} & (
  | {
      kind: 'outcome';
      status: ChargeStatus | MovementStatus;
      replayed: boolean;
      /**
       * True when this attempt found what an earlier attempt had made at the provider (a
       * charge, refund or capture) and adopted it.
       */
      adopted: boolean;
      /** The body the client received, for the reconciler's replay check. */
      body: string;
      /** The charge made, or moved on. */
      chargeId: string;
      /** Why chargeonce refused a refund or capture, else null. */
      refusal: string | null;
    }
  | { kind: 'crash'; point: CrashPoint }
  /**
   * An error that settles the operation for good: `parked`, the engine refused the provider's
   * answer and left the key to a person; `expired`, the key was reaped to a tombstone.
   */
  | { kind: 'terminal'; status: TerminalStatus; code: string }
  /** `code` is the `ChargeOnceError` code, or the error's name for anything else. */
  | { kind: 'retryable'; code: string }
  | { kind: 'unexpected'; code: string; message: string }
);

/**
 * How a wait on a key another attempt held ended: `woken`, with an outcome after the holder's
 * completion notified the waiters; `answered`, with an outcome no notification announced (the key
 * was done by the time the waiter marked it, or it looked again when its time ran out);
 * `timedOut`, with `IdempotencyKeyInUseError`; `failed`, with any other error.
 */
export type WaitEnd = 'woken' | 'answered' | 'timedOut' | 'failed';

/** How an operation settled without an outcome the engine could replay. */
export type TerminalStatus = 'parked' | 'expired';

/** Every way a charge can settle. */
export type ChaosStatus = ChargeStatus | TerminalStatus;

/**
 * Every way a refund or capture can settle; `skipped`: never sent, because its charge did not
 * succeed (there was nothing to move).
 */
export type MovementChaosStatus = MovementStatus | TerminalStatus | 'skipped';

/** Every way an operation can settle. */
export type OperationStatus = ChaosStatus | MovementChaosStatus;

/** How a client's work on one operation ended. */
export type OperationEnd = {
  op: number;
  /**
   * `settled`: an outcome; `abandoned`: walked away; `gaveUp`: out of attempts; `failed`: an
   * unexpected error; `skipped`: a refund or capture of a charge that did not succeed, never
   * sent; `deferred`: one whose charge has no outcome yet (its client walked away), left for
   * the client's return.
   */
  result: 'settled' | 'abandoned' | 'gaveUp' | 'failed' | 'skipped' | 'deferred';
  status: OperationStatus | null;
  lastError: string | null;
  /** For a charge that settled with an outcome: its id, which its refunds and captures need. */
  chargeId?: string;
};

/** A charge whose outcome is known, as its refunds and captures need it. */
export type KnownCharge = { status: OperationStatus; chargeId: string | null };

/** Where a client loop reports to: the tally in process, or the IPC channel in a worker. */
export type OperationSink = {
  attempt(event: AttemptEvent): void;
  ended(end: OperationEnd): void;
};
