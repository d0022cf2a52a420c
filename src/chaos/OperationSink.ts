import type { ChargeStatus, CrashPoint } from '../engine/types.js';

/** How one `processCharge` call of a chaos client ended. */
export type AttemptEvent = {
  op: number;
  merchantId: string;
  key: string;
  /** The attempt was set to stall past its lease somewhere. */
  stalled: boolean;
  /** The attempt stepped its process's wall clock first. */
  clockStepped: boolean;
  /** A second submission of the request, sent alongside its first attempt and never retried. */
  duplicate: boolean;
  /** How the attempt's wait on the key in progress ended, if it waited (`inProgress: { waitMs }`). */
  wait: WaitEnd | null;
} & (
  | {
      kind: 'outcome';
      status: ChargeStatus;
      replayed: boolean;
      /** True when this attempt found an earlier attempt's charge and adopted it. */
      adopted: boolean;
      /** The body the client received, for the reconciler's replay check. */
      body: string;
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

/** Every way an operation can settle. */
export type ChaosStatus = ChargeStatus | TerminalStatus;

/** How a client's work on one operation ended. */
export type OperationEnd = {
  op: number;
  /** `settled`: an outcome; `abandoned`: walked away; `gaveUp`: out of attempts; `failed`: an unexpected error. */
  result: 'settled' | 'abandoned' | 'gaveUp' | 'failed';
  status: ChaosStatus | null;
  lastError: string | null;
};

/** Where a client loop reports to: the tally in process, or the IPC channel in a worker. */
export type OperationSink = {
  attempt(event: AttemptEvent): void;
  ended(end: OperationEnd): void;
};
