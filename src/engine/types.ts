import type { PoolInput } from '../store/resolvePool.js';
import type { HookTransaction } from './hookTransaction.js';
import type { MovementHooks } from './movementTypes.js';
import type { ChargeOnceEvent } from '../observability/events.js';
import type { EventLogger } from '../observability/eventSink.js';
import type { TelemetryOptions } from '../observability/observer.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import type { ChargeRequest } from '../request.js';

/** How a charge ended. `succeeded` and `declined` come from the provider. */
export type ChargeStatus = 'succeeded' | 'declined' | 'rejected' | 'cancelled';

/** The result of `processCharge`: the same on the first attempt and on every replay. */
export type ChargeOutcome = {
  /** `rejected`: a `reserve` hook refused the charge; `cancelled`: a recovery worker gave up. */
  status: ChargeStatus;
  /** 201 succeeded, 402 declined, or the status a `reserve` hook rejected with. */
  httpStatus: number;
  /** The response body as JSON text, byte for byte what the first attempt produced. */
  body: string;
  /** True when this call returned a stored outcome instead of doing the work. */
  replayed: boolean;
  /** The local charge id (a UUID). */
  chargeId: string;
  /** The provider's charge id, or null when no provider charge exists. */
  providerChargeId: string | null;
};

/** What every hook is told about the charge it runs for. */
export type HookContext = {
  merchantId: string;
  operation: string;
  key: string;
  chargeId: string;
  providerKey: string;
  request: ChargeRequest;
};

/** What the `complete` hook is told on top of {@link HookContext}. */
export type CompleteHookContext = HookContext & {
  status: 'succeeded' | 'declined';
  providerChargeId: string;
  declineCode: string | null;
  /** True when the provider charge was found by `findCharge` after an interrupted attempt. */
  adopted: boolean;
};

/**
 * The caller's own SQL, run inside chargeonce's phase transactions: it commits with the phase or
 * not at all. A hook must use the `tx` it is given, never another connection: `tx.query(text,
 * values)` with `$1…` placeholders, or `tx.query(statement)` with a slonik `sql` token, a
 * node-postgres `{ text, values }`, Knex's `{ sql, bindings }` or Drizzle's `{ sql, params }`.
 */
export type ChargeHooks = {
  /**
   * Runs in the transaction that claims the key and writes the charge intent, before money moves
   * (reserve stock, hold an order). Throw `ChargeRejectedError(status, body)` to end the charge
   * with that stored outcome; any other throw rolls the phase back and releases the key.
   */
  reserve?: (tx: HookTransaction, ctx: HookContext) => Promise<void>;
  /** Runs in the transaction that records the provider's answer (mark the order paid). */
  complete?: (tx: HookTransaction, ctx: CompleteHookContext) => Promise<void>;
  /**
   * Runs in the transaction where the recovery worker cancels a charge its client abandoned
   * before the provider made it: release what `reserve` held.
   */
  cancel?: (tx: HookTransaction, ctx: HookContext) => Promise<void>;
  /** The hooks of refunds (`processRefund`), in their phases' transactions. */
  refund?: MovementHooks;
  /** The hooks of captures (`processCapture`), in their phases' transactions. */
  capture?: MovementHooks;
};

export const CRASH_POINTS = [
  'afterClaimCommit',
  'afterReserveCommit',
  'beforeProviderCall',
  'afterProviderCall',
  'beforeCompleteCommit',
  'afterCompleteCommit',
] as const;

/**
 * Named boundaries of an attempt where a test or the chaos harness can inject a crash:
 * - `afterClaimCommit`: the key is claimed (at `started` with `separateClaim`, else `reserved`);
 * - `afterReserveCommit`: the charge intent is committed;
 * - `beforeProviderCall`: about to call the provider;
 * - `afterProviderCall`: the provider answered, nothing recorded yet;
 * - `beforeCompleteCommit`: the completion is written but not committed; the connection is
 *   dropped, so PostgreSQL rolls it back;
 * - `afterCompleteCommit`: the outcome is stored, the response never reaches the caller.
 */
export type CrashPoint = (typeof CRASH_POINTS)[number];

/**
 * Decides, at each crash point, whether the attempt dies there. Tests and the chaos harness
 * only: an injected crash rejects the attempt with `SimulatedCrashError` and runs no cleanup.
 */
export type FaultInjector = {
  shouldCrash(
    point: CrashPoint,
    ctx: { merchantId: string; operation: string; key: string },
  ): boolean;
  /**
   * Stalls the attempt at `point` until the returned promise settles, as a commit held up by a
   * synchronous standby, a slow hook or a paused process would: `afterClaimCommit` is a claim
   * whose COMMIT was acknowledged late, `afterProviderCall` a completion that waits. Return
   * `undefined` to go on at once.
   */
  stall?(
    point: CrashPoint,
    ctx: { merchantId: string; operation: string; key: string },
  ): Promise<void> | undefined;
};

/**
 * A monotonic clock in milliseconds: the engine measures leases and provider budgets on it. By
 * default `performance.now()` plus any time it missed while the host was suspended, read from
 * the wall clock's lead (see the README's Guarantee 2): a wall-clock step back cannot stretch a
 * lease or a budget, and a step forward only shortens them. Tests inject one to move time
 * forward together with the leases they expire in SQL.
 */
export type MonotonicClock = { now(): number };

/** What to do when another attempt holds the key. */
export type InProgressPolicy = 'reject' | { waitMs: number };

/** Options of {@link createChargeEngine}. */
export type ChargeEngineOptions = {
  /**
   * A connection string (the engine makes a pool of its own; `close()` ends it), a node-postgres
   * `pg.Pool` (the fastest: the hot statements go to it as prepared statements), or a slonik pool.
   * A pool you pass stays yours: the engine borrows connections and never ends it.
   */
  pool: PoolInput;
  /** The payment provider adapter. */
  provider: PaymentProvider;
  /**
   * The schema `migrate` created.
   * @defaultValue `'chargeonce'`
   */
  schema?: string;
  /**
   * The operation keys are scoped to, with the merchant.
   * @defaultValue `'charge'`
   */
  operation?: string;
  /**
   * How long an attempt owns a key. Past it, another attempt may take over.
   * @defaultValue `30_000`
   */
  leaseMs?: number;
  /**
   * How long one attempt may spend at the provider in all (the lookup and the charge together);
   * must be less than `leaseMs`, so an attempt has stopped waiting on the provider before its
   * lease can be taken. A request the adapter does not abort may still land later: that is what
   * `sweepGraceMs` leaves room for.
   * @defaultValue `10_000`
   */
  providerTimeoutMs?: number;
  /**
   * What an attempt keeps in hand past the provider budget: it calls the provider only while its
   * lease, measured from before the statement that set it was sent, outlasts
   * `providerTimeoutMs + leaseMarginMs`; otherwise it renews the lease first (one fenced
   * statement) or gives up. Covers the time between that check and the request leaving, and
   * PostgreSQL's clock running a little fast against this process's.
   * @defaultValue `min(1_000, (leaseMs - providerTimeoutMs) / 2)`, rounded down
   */
  leaseMarginMs?: number;
  /**
   * How long the reaper keeps completed keys with their stored response: a retry within it is
   * replayed byte for byte.
   * @defaultValue `72 * 3600_000` (72 hours)
   */
  retentionMs?: number;
  /**
   * How long a reaped key stays as a tombstone (scope, key, fingerprint, charge id), counted from
   * its completion: a retry within it is refused with `IdempotencyKeyExpiredError`, never charged
   * again. Past it the key is forgotten and may be used afresh. Must exceed `retentionMs`; keep it
   * longer than any client, queue or person could retry.
   * @defaultValue `30 * 24 * 3600_000` (30 days), or ten times `retentionMs` if that is longer
   */
  tombstoneRetentionMs?: number;
  /** The monotonic clock leases and provider budgets are measured on. */
  clock?: MonotonicClock;
  /**
   * `'reject'` answers at once with `IdempotencyKeyInUseError`; `{ waitMs }` waits up to `waitMs`
   * for the running attempt's outcome first (then `IdempotencyKeyInUseError`). Callers of this
   * engine with the same key and request share one attempt and get its outcome as a replay; on a
   * node-postgres pool a caller waiting on an attempt elsewhere is woken by that attempt's commit
   * (LISTEN/NOTIFY on one connection of the engine's own), polling only as a fallback.
   * @defaultValue `'reject'`
   */
  inProgress?: InProgressPolicy;
  /** The caller's own SQL, run inside the phase transactions. */
  hooks?: ChargeHooks;
  /**
   * How long past the end of its lease (or its release) an unfinished key must sit before the
   * sweeper takes it. Leaves room for the client's own retry, and for a provider request still
   * in flight when the lease ended (one the adapter did not abort). Keep it at least as long as
   * the provider's worst latency; 0 is for tests.
   * @defaultValue `leaseMs`
   */
  sweepGraceMs?: number;
  /**
   * Sweeps of a key at `reserved` after which the sweeper parks it in `failed` for a person, when
   * the provider still cannot say whether it charged (or a hook of yours keeps failing). Only
   * the sweeper's passes count, spaced by `sweepGraceMs`: a client's retries during an outage say
   * nothing about whether the provider will answer later.
   * The sweeper always asks the provider first: a charge it finds is adopted whatever the count,
   * and a key at `started` (nothing charged) is released, never parked.
   * @defaultValue `5`
   */
  maxAttempts?: number;
  /**
   * What the sweeper does with a key at `reserved` when the provider has no charge under it:
   * `'cancel'` stores a terminal `cancelled` outcome (410) and runs `hooks.cancel`; `'complete'`
   * charges now, as the client asked.
   * @defaultValue `'cancel'`
   */
  onAbandoned?: 'cancel' | 'complete';
  /**
   * Group commit: concurrent calls of this engine share round trips and commits: their claims go
   * to PostgreSQL as one statement, and so do their completions (each key's result its own). Only
   * what is already waiting when the previous batch returns is batched, so a lone call goes out
   * at once. Needs a node-postgres pool (or a connection string); calls with a `reserve` or
   * `complete` hook run their phase unbatched, in a transaction of their own.
   * @defaultValue `true`
   */
  groupCommit?: boolean;
  /**
   * Receives every event (claimed, replayed, conflict, waiting, reused, adopted, cancelled,
   * parked, requeued, resolved, lease_lost, provider_failed, swept, reaped) as it happens.
   * Whatever it throws (or rejects with) is caught: a handler never breaks a charge.
   */
  onEvent?: (event: ChargeOnceEvent) => void;
  /**
   * A pino-compatible logger (pino itself, or a child): events are logged at sensible levels
   * (`parked` an error; `reused`, `lease_lost`, `provider_failed` warnings; recovery work info; the
   * everyday path debug). A logger that throws never breaks a charge.
   */
  logger?: EventLogger;
  /**
   * OpenTelemetry spans and metrics, through the global tracer and meter (no-ops until an SDK is
   * registered) or the ones given here; `false` turns them off.
   */
  telemetry?: TelemetryOptions | false;
  /** Crash injection for tests and the chaos harness. Leave unset in production. */
  faults?: FaultInjector;
  /**
   * Commit the claim on its own (at `started`) before the reserve phase, instead of in the same
   * statement: one more round trip and commit per fresh charge. For the chaos harness, which
   * needs to crash between the two; no reason to turn it on otherwise.
   * @defaultValue `false`
   */
  separateClaim?: boolean;
};
