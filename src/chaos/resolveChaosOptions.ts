import { randomInt } from 'node:crypto';
import { InvalidConfigurationError } from '../errors.js';
import {
  FAKE_SERVER_FAULTS,
  type FakeServerRates,
  type LatencyRange,
} from '../provider/createFaultSchedule.js';
import type { ChaosProgress } from './ChaosReport.js';

/** Options of {@link runChaos}. Every rate is a probability in [0, 1]. */
export type ChaosOptions = {
  /** The PostgreSQL to run against; the harness migrates `schema` there first. */
  databaseUrl: string;
  /**
   * The schema to migrate and charge in. A schema of its own keeps chaos rows away from real ones;
   * rows of earlier runs may stay in it (each run uses merchants of its own and only judges those).
   * @defaultValue `'chargeonce_chaos'`
   */
  schema?: string;
  /**
   * How many operations (one key, one request each) to run: charges, and refunds and captures
   * of them (see `movementRate`).
   * @defaultValue `1_000`
   */
  charges?: number;
  /**
   * The share of operations that are refunds and captures rather than charges, at most 0.9
   * (each needs a charge to move money on). They come in families after their charge has
   * succeeded: refunds racing on a captured charge, or one or two captures racing on an
   * authorization (`capture: false`, full, partial or more than authorized) and then refunds,
   * with amounts that often add up to more than is refundable, so refusals happen too. Needs a
   * provider that refunds and captures, and its records of them: with a `providerModule` that
   * has no `movementLedger` export, no movement is run.
   * @defaultValue `0.3`
   */
  movementRate?: number;
  /**
   * Operations in flight at once, per worker.
   * @defaultValue `8`
   */
  concurrency?: number;
  /**
   * Worker child processes the operations are spread over; `0` runs them in this process (then
   * nothing can be killed, and `killRate` is ignored).
   * @defaultValue `2`
   */
  workers?: number;
  /**
   * After each operation a worker reports settled, the chance that the harness `SIGKILL`s a random
   * busy worker a random 0–250 ms later. A killed worker is restarted with the operations it had
   * not reported settled; they are retried with the same keys.
   * @defaultValue `0.01`
   */
  killRate?: number;
  /**
   * The chance that an attempt is set to die at one of the engine's crash points, drawn at
   * random (`CRASH_POINTS`). A quarter of all attempts also claim with `separateClaim`, so a
   * crash at `afterClaimCommit` can leave a key at `started`.
   * @defaultValue `0.05`
   */
  crashRate?: number;
  /**
   * The chance that an attempt stalls for about a lease (from a lease less the provider budget up
   * to a lease and a half) at a random one of `STALL_POINTS`: a claim whose COMMIT is acknowledged late, a pause
   * before the provider call, a completion held up after it. Meanwhile the background sweeper
   * may take the key over.
   * @defaultValue `0.02`
   */
  stallRate?: number;
  /**
   * The chance that an attempt's claim is held uncommitted (a `reserve` hook that takes its time)
   * while its request is sent again on an engine of its own (another server's, its own pool;
   * refusing and waiting on keys in progress by turns). That retry must be answered 409 while
   * the claim is still held (at once, or when its own wait runs out), not kept waiting on the
   * key: one answered only once the hold ended, or answered otherwise, is a failure of the run
   * (`holds.blocked`, `holds.otherwise`). The hold lasts a drawn time up to 1.5 s, and until the
   * retry is answered (5 s past `waitMs` at most). A process holds one claim at a time. Drawn
   * for each attempt when above 0: a seed of a run without it replays with 0.
   * @defaultValue `0.01`
   */
  holdRate?: number;
  /**
   * The chance, per attempt, that the attempting process's wall clock (`Date.now`) steps an hour
   * or a minute forwards or backwards, for the rest of the run.
   * @defaultValue `0.005`
   */
  clockStepRate?: number;
  /**
   * After each operation a client reports settled, the chance that the fake provider goes down
   * for `outageMs` (every charge and lookup answered 503), unless it is down already. Needs the
   * built-in fake provider; ignored with `providerModule`.
   * @defaultValue `0.002`
   */
  outageRate?: number;
  /**
   * How long an outage lasts: long enough that clients and the background sweeper use up their
   * attempts against it.
   * @defaultValue `3 * leaseMs`
   */
  outageMs?: number;
  /**
   * The engines' `retentionMs`: the background reaper turns completed keys older than this into
   * tombstones while the clients still retry.
   * @defaultValue `1_000`
   */
  retentionMs?: number;
  /**
   * The chance that a client whose operation settled comes back once more at the end of the run,
   * after the reaper took its key: it must be refused (`IdempotencyKeyExpiredError`) or replayed,
   * never charged again.
   * @defaultValue `0.05`
   */
  lateRetryRate?: number;
  /**
   * How often the background sweeper and reaper run while the clients charge, in ms; `0` runs
   * none (then only the final sweep finishes abandoned keys).
   * @defaultValue `250`
   */
  sweepEveryMs?: number;
  /**
   * Connections of the harness's own pool (the background sweeper and reaper, in-process clients)
   * and of each worker's. Group commit batches the claims (and completions) that come while the
   * engine's earlier ones hold the pool's connections, so a pool well below `concurrency` is what
   * makes batches form; with a connection per client they seldom would.
   * @defaultValue `concurrency / 4`, rounded up, and at least 3
   */
  poolSize?: number;
  /**
   * The chance that a client whose attempt failed (a crash, or a retryable error) walks away
   * instead of retrying, as a user closing the app would. The final sweep finishes those keys;
   * the client then comes back once and must be shown the stored outcome.
   * @defaultValue `0.05`
   */
  abandonRate?: number;
  /**
   * The chance that an operation's request is sent twice at about the same time (within 10 ms,
   * either first), as a double tap or a load balancer's retry would: the second submission goes
   * through the process's engine with the other in-progress policy (see `waitMs`), so one of the
   * two holds the key while the other waits for its outcome or is refused with a 409. It never
   * retries, and whatever outcome it gets must be the stored one.
   * @defaultValue `0.05`
   */
  duplicateRate?: number;
  /**
   * How long an engine that waits on keys in progress (`inProgress: { waitMs }`) waits. Each
   * process's engines are shared by all its clients: in the harness's own process and in even
   * workers the clients' engines wait and second submissions (`duplicateRate`) are refused at
   * once (`'reject'`); in odd workers the other way round, so both paths run. Shorter than a
   * lease, so a wait on a key a crashed attempt still holds times out (409) while a wait on a key
   * whose attempt is at work is woken by its completion. `0`: no engine waits.
   * @defaultValue `leaseMs / 2`, rounded down
   */
  waitMs?: number;
  /**
   * Fault rates of the fake provider server (see `FakeServerFault`); missing ones are `0` when
   * this is given.
   * @defaultValue hang 0.01, errorBeforeCharge 0.02, errorAfterCharge 0.02, resetAfterCharge
   * 0.02, tooManyRequests 0.02, decline 0.1, wrongAmount 0.002, malformed 0.002
   */
  providerFaults?: Partial<FakeServerRates>;
  /**
   * Latency the fake provider adds to each request, in ms: a number is the maximum (drawn from
   * [0, max]). Must stay below `providerTimeoutMs`: a charge that lands after its caller gave up
   * is one no engine can account for in time, and the run would report the fake, not the engine.
   * @defaultValue `{ min: 0, max: 20 }`
   */
  latencyMs?: LatencyRange | number;
  /**
   * How long the fake provider remembers an idempotency key. Lower it (to `0`) to check that an
   * adapter's `findCharge` really finds charges: without that lookup a retry charges twice.
   * @defaultValue `Infinity`
   */
  idempotencyWindowMs?: number;
  /**
   * Seed of every random choice: requests, crash points, kill moments, provider faults. The same
   * seed gives the same requests and fault rates; with concurrency the exact schedule still varies.
   * @defaultValue a random seed, reported as `seed`
   */
  seed?: number;
  /**
   * The engine's lease. Short, so killed and crashed attempts become retryable soon.
   * @defaultValue `2_000`
   */
  leaseMs?: number;
  /**
   * The engine's provider timeout; less than `leaseMs`.
   * @defaultValue `1_000`
   */
  providerTimeoutMs?: number;
  /**
   * Attempts a client makes for one operation before it gives up (the final sweep and a last
   * visit of the client settle it then).
   * @defaultValue `50`
   */
  maxClientAttempts?: number;
  /**
   * Path of a module with your own provider adapter, used instead of the built-in HTTP adapter by
   * every attempt and by the final sweep. See {@link ChaosProviderModule} for its contract.
   * @defaultValue the built-in adapter (`createHttpProvider`) on the harness's fake provider
   */
  providerModule?: string;
  /** Called as the run progresses (often: keep it cheap). */
  onProgress?: (progress: ChaosProgress) => void;
};

/** Options with every default filled in and checked. */
export type ResolvedChaosOptions = Required<
  Omit<
    ChaosOptions,
    'providerModule' | 'onProgress' | 'latencyMs' | 'providerFaults' | 'outageMs' | 'poolSize'
  >
> & {
  latencyMs: LatencyRange;
  providerFaults: FakeServerRates;
  outageMs: number;
  poolSize: number;
  providerModule: string | undefined;
  onProgress: (progress: ChaosProgress) => void;
};

/** The fake provider's fault rates when `providerFaults` is not given. */
export const DEFAULT_PROVIDER_FAULTS: Readonly<FakeServerRates> = {
  hang: 0.01,
  errorBeforeCharge: 0.02,
  errorAfterCharge: 0.02,
  resetAfterCharge: 0.02,
  tooManyRequests: 0.02,
  decline: 0.1,
  wrongAmount: 0.002,
  malformed: 0.002,
};

/**
 * Fills in defaults and refuses settings that cannot give a meaningful run.
 * @throws {InvalidConfigurationError} for a value out of range.
 */
export function resolveChaosOptions(options: ChaosOptions): ResolvedChaosOptions {
  const latency =
    typeof options.latencyMs === 'number'
      ? { min: 0, max: options.latencyMs }
      : (options.latencyMs ?? { min: 0, max: 20 });
  const resolved: ResolvedChaosOptions = {
    databaseUrl: options.databaseUrl,
    schema: options.schema ?? 'chargeonce_chaos',
    charges: options.charges ?? 1_000,
    movementRate: options.movementRate ?? 0.3,
    concurrency: options.concurrency ?? 8,
    workers: options.workers ?? 2,
    killRate: options.killRate ?? 0.01,
    crashRate: options.crashRate ?? 0.05,
    abandonRate: options.abandonRate ?? 0.05,
    duplicateRate: options.duplicateRate ?? 0.05,
    waitMs: options.waitMs ?? Math.floor((options.leaseMs ?? 2_000) / 2),
    stallRate: options.stallRate ?? 0.02,
    holdRate: options.holdRate ?? 0.01,
    clockStepRate: options.clockStepRate ?? 0.005,
    outageRate: options.outageRate ?? 0.002,
    outageMs: options.outageMs ?? 3 * (options.leaseMs ?? 2_000),
    retentionMs: options.retentionMs ?? 1_000,
    lateRetryRate: options.lateRetryRate ?? 0.05,
    sweepEveryMs: options.sweepEveryMs ?? 250,
    poolSize: options.poolSize ?? Math.max(3, Math.ceil((options.concurrency ?? 8) / 4)),
    providerFaults: options.providerFaults
      ? { ...zeroFaults(), ...options.providerFaults }
      : { ...DEFAULT_PROVIDER_FAULTS },
    latencyMs: latency,
    idempotencyWindowMs: options.idempotencyWindowMs ?? Infinity,
    seed: options.seed ?? randomInt(2 ** 31),
    leaseMs: options.leaseMs ?? 2_000,
    providerTimeoutMs: options.providerTimeoutMs ?? 1_000,
    maxClientAttempts: options.maxClientAttempts ?? 50,
    providerModule: options.providerModule,
    onProgress: options.onProgress ?? (() => {}),
  };
  if (typeof resolved.databaseUrl !== 'string' || resolved.databaseUrl === '') {
    throw new InvalidConfigurationError('databaseUrl is required');
  }
  requireInteger('charges', resolved.charges, 1);
  if (!(
    typeof resolved.movementRate === 'number' &&
    resolved.movementRate >= 0 &&
    resolved.movementRate <= 0.9
  )) {
    throw new InvalidConfigurationError(
      `movementRate must be in [0, 0.9] (each refund or capture needs a charge), got ${String(resolved.movementRate)}`,
    );
  }
  requireInteger('concurrency', resolved.concurrency, 1);
  requireInteger('workers', resolved.workers, 0);
  requireInteger('leaseMs', resolved.leaseMs, 1);
  requireInteger('providerTimeoutMs', resolved.providerTimeoutMs, 1);
  requireInteger('maxClientAttempts', resolved.maxClientAttempts, 1);
  requireInteger('seed', resolved.seed, 0);
  requireRate('killRate', resolved.killRate);
  requireRate('crashRate', resolved.crashRate);
  requireRate('abandonRate', resolved.abandonRate);
  requireRate('duplicateRate', resolved.duplicateRate);
  requireInteger('waitMs', resolved.waitMs, 0);
  requireRate('stallRate', resolved.stallRate);
  requireRate('holdRate', resolved.holdRate);
  requireRate('clockStepRate', resolved.clockStepRate);
  requireRate('outageRate', resolved.outageRate);
  requireRate('lateRetryRate', resolved.lateRetryRate);
  requireInteger('outageMs', resolved.outageMs, 0);
  requireInteger('retentionMs', resolved.retentionMs, 1);
  requireInteger('sweepEveryMs', resolved.sweepEveryMs, 0);
  requireInteger('poolSize', resolved.poolSize, 1);
  for (const fault of FAKE_SERVER_FAULTS) {
    requireRate(`providerFaults.${fault}`, resolved.providerFaults[fault]);
  }
  if (!(resolved.idempotencyWindowMs >= 0)) {
    throw new InvalidConfigurationError('idempotencyWindowMs must be >= 0 (or Infinity)');
  }
  if (!(latency.min >= 0 && latency.max >= latency.min)) {
    throw new InvalidConfigurationError('latencyMs must have 0 <= min <= max');
  }
  if (latency.max >= resolved.providerTimeoutMs) {
    throw new InvalidConfigurationError(
      `latencyMs (max ${latency.max}) must be less than providerTimeoutMs (${resolved.providerTimeoutMs}): past the timeout the fake provider charges after its caller gave up, and violations would no longer point at the engine`,
    );
  }
  return resolved;
}

function zeroFaults(): FakeServerRates {
  return Object.fromEntries(FAKE_SERVER_FAULTS.map((f) => [f, 0])) as FakeServerRates;
}

function requireInteger(name: string, value: number, min: number): void {
  if (!(Number.isSafeInteger(value) && value >= min)) {
    throw new InvalidConfigurationError(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

function requireRate(name: string, value: number): void {
  if (!(typeof value === 'number' && value >= 0 && value <= 1)) {
    throw new InvalidConfigurationError(`${name} must be in [0, 1], got ${String(value)}`);
  }
}
