import type { CrashPoint } from '../engine/types.js';
import type {
  FakeServerFault,
  FakeServerRates,
  LatencyRange,
} from '../provider/createFaultSchedule.js';
import type { SweepResult } from '../recovery/sweep.js';
import type { GroupCommitCounts } from './countGroupCommit.js';
import type { MovementCounts } from './createChaosTally.js';
import type { ChaosStatus, OperationKind, WaitEnd } from './OperationSink.js';
import type { ParkedKey, Violation } from './reconcile.js';

/** Where a chaos run is, for a progress display. */
export type ChaosProgress = {
  phase: 'charging' | 'sweeping' | 'returning' | 'reconciling';
  /** Operations whose client got a final outcome (or walked away) so far. */
  ended: number;
  total: number;
  attempts: number;
  crashes: number;
  kills: number;
};

/** Claims held uncommitted while their request was sent again, by how the retry was answered. */
export type HoldCounts = {
  held: number;
  answered: number;
  blocked: number;
  otherwise: number;
  /**
   * The slowest 409 to a refusing retry of a held claim, in ms (see `heldRefusalMs`); null when
   * no claim was held, or every retry went through a waiting engine.
   */
  slowestRefusalMs: number | null;
};

/** An operation that never got a final outcome, even after the sweep and the client's return. */
export type UnsettledOperation = {
  merchantId: string;
  key: string;
  operation: OperationKind;
  /** The code of the last error its client got, if any. */
  lastError: string | null;
};

/** An error no retry could change, which a client got although nothing was wrong with its request. */
export type UnexpectedError = { merchantId: string; key: string; code: string; message: string };

/** What {@link runChaos} did and found. `ok` is the verdict. */
export type ChaosReport = {
  /**
   * True when there were no violations, no unexpected errors, every operation settled, and every
   * retry of a held claim was answered with a 409 while it was held (`holds.blocked` and
   * `holds.otherwise` are 0).
   */
  ok: boolean;
  /** The run's id; its merchants are `chaos-<runId>-m<N>`. */
  runId: string;
  /** The seed: pass it again to replay the same requests and fault rates. */
  seed: number;
  schema: string;
  durationMs: number;
  config: {
    workers: number;
    concurrency: number;
    /**
     * The share of operations that were refunds and captures: as asked, or 0 when the provider
     * module cannot refund and capture or has no `movementLedger` to check them against.
     */
    movementRate: number;
    killRate: number;
    crashRate: number;
    stallRate: number;
    holdRate: number;
    clockStepRate: number;
    abandonRate: number;
    duplicateRate: number;
    /** How long waiting engines waited on a key in progress; `0`: none did. */
    waitMs: number;
    outageRate: number;
    outageMs: number;
    retentionMs: number;
    lateRetryRate: number;
    sweepEveryMs: number;
    poolSize: number;
    providerFaults: FakeServerRates;
    latencyMs: LatencyRange;
    idempotencyWindowMs: number | null;
    leaseMs: number;
    providerTimeoutMs: number;
    /** The `providerModule` path, or `null` for the built-in HTTP adapter. */
    providerModule: string | null;
    /** Where the ledger the reconciler checked came from. */
    ledger: 'fake-provider' | 'provider-module';
  };
  /** Operations run, one key each: charges, refunds and captures. */
  charges: number;
  /** The operations planned, by kind (`charges` in all). */
  operations: { charges: number; refunds: number; captures: number };
  /** Operations that got a final outcome, during the run or on the client's return. */
  settled: number;
  /**
   * The final outcome of each settled charge, by status: `parked` when the engine refused the
   * provider's answer and left the key to a person, `expired` when the key was reaped before the
   * client came back for its outcome.
   */
  outcomes: Record<ChaosStatus, number>;
  /**
   * The final outcome of each settled refund and capture, by status: `succeeded` (money moved),
   * `failed` (the provider refused it), `refused` (chargeonce refused it: see `refusals`),
   * `cancelled` (the sweeper found nothing at the provider), `parked`, `expired`, and `skipped`
   * (never sent: its charge did not succeed).
   */
  movements: { refund: MovementCounts; capture: MovementCounts };
  /** Refunds and captures chargeonce refused, by `refusal` (`exceeds_refundable`, …). */
  refusals: Record<string, number>;
  /** Clients that walked away after a failed attempt (`abandonRate`). */
  abandoned: number;
  /** `processCharge` calls, the return visits and second submissions included. */
  attempts: number;
  /** Attempts after an operation's first (second submissions are not retries). */
  retries: number;
  /** Requests sent a second time alongside their first attempt (`duplicateRate`). */
  duplicates: number;
  /**
   * How the clients' claims and completions went to PostgreSQL, over every process: alone, or
   * batched with other keys' into one statement by group commit.
   */
  groupCommit: GroupCommitCounts;
  /**
   * Attempts that waited on a key another attempt held (`inProgress: { waitMs }`), and how each
   * wait ended: `woken` by the holder's completion notifying the waiters, then answered;
   * `answered` without a notification heard (the key was done when the waiter looked again);
   * `timedOut` (409); `failed` with another error.
   */
  waits: { waited: number } & Record<WaitEnd, number>;
  /**
   * Retryable errors clients got, by code (`idempotency_key_in_use`, `provider_unavailable`, …);
   * a `store_unavailable` that was a lock wait cut short is counted as `store_unavailable:lock_wait`
   * (the error's code is `store_unavailable` either way).
   */
  retryableErrors: Record<string, number>;
  /** Injected crashes that fired, by crash point, and how many of them in refunds and captures. */
  crashes: { total: number; byPoint: Record<CrashPoint, number>; onMovements: number };
  /** Attempts set to stall past their lease, and attempts that stepped their wall clock first. */
  stalls: number;
  /**
   * Of the stalls, those that suspended their whole process instead, its monotonic clock stopped
   * while the wall clock (and PostgreSQL's) ran on: a VM paused, a host asleep. One stall in four
   * is to, once none of the process's provider calls is in flight (see `suspendHost`).
   */
  suspends: number;
  /**
   * Claims held uncommitted while their request was sent again (`holdRate`), and how each retry
   * was answered: with a 409 while the claim was held (`answered`); only once the hold ended
   * (`blocked`, a failure: it waited on the key for as long as the holder's transaction lasted);
   * or with anything else while it was held (`otherwise`, a failure too).
   */
  holds: HoldCounts;
  clockSteps: number;
  /** Provider outages started, and the requests refused during them. */
  outages: { started: number; refusedRequests: number };
  /** Worker processes the harness `SIGKILL`ed. */
  processesKilled: number;
  /** Worker processes started, the first ones included. */
  processesStarted: number;
  /**
   * What the harness's fake provider server injected, from its stats: all zero when a provider
   * module brings its own provider (its faults are its own to count).
   */
  providerFaults: Record<FakeServerFault, number>;
  /** Charges in the provider ledger the run was reconciled against, duplicates included. */
  providerCharges: number;
  /** Refunds and captures the provider recorded, by status (`failed`: it refused them). */
  providerMovements: {
    refunds: { succeeded: number; failed: number };
    captures: { succeeded: number; failed: number };
  };
  /** Outcomes that were stored ones (`replayed: true`). */
  replays: number;
  /**
   * Charges, refunds and captures an interrupted attempt had made and a later one adopted (found
   * by the provider lookup) instead of making again: by clients, and by the sweeps (the
   * background one and the final one).
   */
  adoptions: { total: number; byClients: number; bySweep: number };
  /** The final sweep, all passes together. */
  sweep: SweepResult & { passes: number };
  /**
   * Keys the sweepers parked because the provider could not answer (an outage), requeued after
   * it as a person would, then finished by the final sweep.
   */
  requeued: number;
  /** The sweeper and reaper that ran while the clients charged. */
  background: { sweep: SweepResult & { passes: number }; reaped: number; errors: number };
  /**
   * Clients that came back once more after their key was reaped: each must be refused
   * (`expired`) or replayed, never charged again.
   */
  late: { visits: number; expired: number; replayed: number };
  /** Keys the engine parked because it refused the provider's answer (not violations). */
  parked: ParkedKey[];
  /** Everything the reconciler found wrong; empty in a good run. */
  violations: Violation[];
  unexpectedErrors: UnexpectedError[];
  unsettled: UnsettledOperation[];
};
