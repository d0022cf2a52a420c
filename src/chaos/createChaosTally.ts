import { CRASH_POINTS, type CrashPoint } from '../engine/types.js';
import type { ChaosProgress, HoldCounts, UnexpectedError } from './ChaosReport.js';
import type { ChaosPlan } from './createChaosPlan.js';
import type {
  ChaosStatus,
  KnownCharge,
  MovementChaosStatus,
  OperationEnd,
  OperationSink,
  OperationStatus,
  WaitEnd,
} from './OperationSink.js';
import type { ObservedResponse } from './reconcile.js';

/** Refunds or captures by how they settled. */
export type MovementCounts = Record<MovementChaosStatus, number>;

/** Counts what the clients of a chaos run went through, from their events. */
export type ChaosTally = {
  sink: OperationSink;
  /** Operations whose client has seen no outcome yet: walked away, out of attempts, or failed. */
  unsettled(): number[];
  /** The last error of an operation's client, if any. */
  lastError(op: number): string | null;
  /** A charge operation's outcome, once a client saw one (its movements need its id). */
  known(op: number): KnownCharge | undefined;
  observations(): ObservedResponse[];
  progress(phase: ChaosProgress['phase'], kills: number): ChaosProgress;
  counts(): {
    attempts: number;
    retries: number;
    retryableErrors: Record<string, number>;
    crashes: { total: number; byPoint: Record<CrashPoint, number>; onMovements: number };
    stalls: number;
    suspends: number;
    holds: HoldCounts;
    clockSteps: number;
    replays: number;
    adoptions: number;
    abandoned: number;
    duplicates: number;
    waits: { waited: number } & Record<WaitEnd, number>;
    outcomes: Record<ChaosStatus, number>;
    movements: { refund: MovementCounts; capture: MovementCounts };
    refusals: Record<string, number>;
    settled: number;
    unexpectedErrors: UnexpectedError[];
  };
};

/** At most this many unexpected errors are kept with their message; all are counted. */
const MAX_KEPT_ERRORS = 100;

/** Creates the tally of a run of the operations of `plan`. */
export function createChaosTally(plan: ChaosPlan): ChaosTally {
  const total = plan.size;
  let attempts = 0;
  let retries = 0;
  let replays = 0;
  let adoptions = 0;
  let abandoned = 0;
  let crashTotal = 0;
  let movementCrashes = 0;
  let stalls = 0;
  let suspends = 0;
  let clockSteps = 0;
  let duplicates = 0;
  const waits = { waited: 0, woken: 0, answered: 0, timedOut: 0, failed: 0 };
  const holds: HoldCounts = {
    held: 0,
    answered: 0,
    blocked: 0,
    otherwise: 0,
    slowestRefusalMs: null,
  };
  const tried = new Set<number>();
  const retryableErrors: Record<string, number> = {};
  const byPoint = Object.fromEntries(CRASH_POINTS.map((p) => [p, 0])) as Record<CrashPoint, number>;
  /** The last outcome each operation's client saw. */
  const finalStatus = new Map<number, OperationStatus>();
  /** Why each refused movement was refused, as last seen. */
  const refusalOf = new Map<number, string>();
  /** The charge id each charge operation's outcome named. */
  const chargeIds = new Map<number, string>();
  const endings = new Map<number, OperationEnd>();
  const observations: ObservedResponse[] = [];
  const unexpectedErrors: UnexpectedError[] = [];

  const sink: OperationSink = {
    attempt(event) {
      attempts += 1;
      if (event.stalled) stalls += 1;
      if (event.suspended) suspends += 1;
      if (event.clockStepped) clockSteps += 1;
      if (event.wait !== null) {
        waits.waited += 1;
        waits[event.wait] += 1;
      }
      if (event.heldClaim !== undefined) {
        holds.held += 1;
        holds[event.heldClaim] += 1;
      }
      if (event.heldRefusalMs !== undefined) {
        holds.slowestRefusalMs = Math.max(holds.slowestRefusalMs ?? 0, event.heldRefusalMs);
      }
      if (event.duplicate) duplicates += 1;
      // Counted per operation, not per process: a restarted worker's first try is a retry too.
      else if (tried.has(event.op)) retries += 1;
      else tried.add(event.op);
      switch (event.kind) {
        case 'outcome':
          finalStatus.set(event.op, event.status);
          if (event.operation === 'charge') chargeIds.set(event.op, event.chargeId);
          if (event.refusal !== null) refusalOf.set(event.op, event.refusal);
          observations.push({ merchantId: event.merchantId, key: event.key, body: event.body });
          if (event.replayed) replays += 1;
          if (event.adopted) adoptions += 1;
          return;
        case 'terminal':
          finalStatus.set(event.op, event.status);
          return;
        case 'crash':
          crashTotal += 1;
          if (event.operation !== 'charge') movementCrashes += 1;
          byPoint[event.point] += 1;
          return;
        case 'retryable':
          retryableErrors[event.code] = (retryableErrors[event.code] ?? 0) + 1;
          return;
        case 'unexpected':
          if (unexpectedErrors.length < MAX_KEPT_ERRORS) {
            unexpectedErrors.push({
              merchantId: event.merchantId,
              key: event.key,
              code: event.code,
              message: event.message,
            });
          }
          return;
      }
    },
    ended(end) {
      if (end.result === 'abandoned') abandoned += 1;
      // Never sent, and settled for good: its charge did not succeed.
      if (end.result === 'skipped') finalStatus.set(end.op, 'skipped');
      endings.set(end.op, end);
    },
  };

  const counts = () => {
    const outcomes: Record<ChaosStatus, number> = {
      succeeded: 0,
      declined: 0,
      rejected: 0,
      cancelled: 0,
      parked: 0,
      expired: 0,
    };
    const movements = { refund: emptyMovementCounts(), capture: emptyMovementCounts() };
    const refusals: Record<string, number> = {};
    for (const [op, status] of finalStatus) {
      const kind = plan.operation(op).kind;
      if (kind === 'charge') outcomes[status as ChaosStatus] += 1;
      else movements[kind][status as MovementChaosStatus] += 1;
      const refusal = status === 'refused' ? refusalOf.get(op) : undefined;
      if (refusal !== undefined) refusals[refusal] = (refusals[refusal] ?? 0) + 1;
    }
    return { outcomes, movements, refusals };
  };

  return {
    sink,
    unsettled: () =>
      Array.from({ length: total }, (_, op) => op).filter((op) => !finalStatus.has(op)),
    lastError: (op) => endings.get(op)?.lastError ?? null,
    known: (op) => {
      const status = finalStatus.get(op);
      return status === undefined ? undefined : { status, chargeId: chargeIds.get(op) ?? null };
    },
    observations: () => observations,
    progress: (phase, kills) => ({
      phase,
      ended: endings.size,
      total,
      attempts,
      crashes: crashTotal,
      kills,
    }),
    counts: () => ({
      attempts,
      retries,
      retryableErrors: { ...retryableErrors },
      crashes: { total: crashTotal, byPoint: { ...byPoint }, onMovements: movementCrashes },
      stalls,
      suspends,
      holds: { ...holds },
      clockSteps,
      replays,
      adoptions,
      abandoned,
      duplicates,
      waits: { ...waits },
      ...counts(),
      settled: finalStatus.size,
      unexpectedErrors: [...unexpectedErrors],
    }),
  };
}

function emptyMovementCounts(): MovementCounts {
  return {
    succeeded: 0,
    failed: 0,
    refused: 0,
    cancelled: 0,
    parked: 0,
    expired: 0,
    skipped: 0,
  };
}
