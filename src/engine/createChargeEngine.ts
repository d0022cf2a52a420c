import { countOption } from '../countOption.js';
import { InvalidConfigurationError, InvalidRequestError } from '../errors.js';
import { validateChargeRequest, type ChargeRequest, type ValidatedRequest } from '../request.js';
import { createObserver, SILENT_OBSERVER } from '../observability/observer.js';
import { recordPendingTelemetry } from '../observability/recordLater.js';
import { createGroupCommit } from '../store/groupCommit.js';
import { createKeyWaiters } from '../store/keyWaiters.js';
import { databaseNameOf } from '../store/databaseName.js';
import { isPoolInput, resolvePool, type StorePools } from '../store/resolvePool.js';
import { checkGroupCommit, checkHooks, checkPoolString, checkTelemetry } from './checkOptions.js';
import { declareRetention } from '../store/retentionWindows.js';
import { withStore } from '../store/storeErrors.js';
import { DEFAULT_SCHEMA, tablesIn } from '../store/tables.js';
import type { EngineEnv } from './engineEnv.js';
import { reap, type ReapOptions } from '../recovery/reap.js';
import { startRecovery, type RecoveryLoopOptions } from '../recovery/startRecovery.js';
import {
  sweep,
  type SweepOptions,
  type SweepResult,
  type SweepSettings,
} from '../recovery/sweep.js';
import { listFailedKeys, type StuckKey } from '../store/listFailedKeys.js';
import { readKeyStatus, type KeyStatus } from '../store/readKeyStatus.js';
import { readUnfinishedKeys } from '../store/readUnfinishedKeys.js';
import { inspectKey } from '../admin/inspectKey.js';
import { listKeys } from '../admin/listKeys.js';
import { requeueParkedKey } from '../admin/requeueParkedKey.js';
import { resolveKey } from '../admin/resolveKey.js';
import type {
  KeyInspection,
  KeyPage,
  KeyTarget,
  ListKeysOptions,
  RequeueTarget,
  ResolveInput,
  ResolveResult,
} from '../admin/types.js';
import { CHARGE } from './chargeOperation.js';
import { observeRefusal } from './observeCharge.js';
import { CAPTURE, REFUND } from './movementDefinitions.js';
import { movementOperation } from './movementOperation.js';
import { processOperation, type OperationOutcome } from './phaseMachine.js';
import type { SharedAttempts } from './sharedAttempts.js';
import { validateCaptureRequest, validateRefundRequest } from '../movementRequest.js';
import { rejected } from '../rejected.js';
import { REFUSED_AT_EDGE, type RefusalCounter } from './refusedAtEdge.js';
import { hostClock } from './hostClock.js';
import type { ChargeEngineOptions, ChargeOutcome } from './types.js';
import type {
  CaptureOutcome,
  CaptureRequest,
  RefundOutcome,
  RefundRequest,
} from './movementTypes.js';

/** The engine: charges exactly once per key. */
export type ChargeEngine = {
  /**
   * Charges once for `key`, however many times it is called, concurrently or not. A completed key
   * returns its stored outcome (`replayed: true`), byte for byte; a decline is an outcome too.
   *
   * @throws {InvalidRequestError} the key or request is invalid; nothing was written.
   * @throws {IdempotencyKeyReusedError} the key was used for a different request.
   * @throws {IdempotencyKeyInUseError} another attempt holds the key (after `waitMs`, if set).
   * @throws {ProviderUnavailableError} transient provider failure; retry with the same key.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach; retry with the same key.
   * @throws {ProviderError} the provider adapter threw something that is not transient; the key
   * was released at its recovery point.
   * @throws {ChargeNeedsAttentionError} the key is parked in `failed` (`listStuck()` says why).
   * @throws {ProviderAnswerInvalidError} the provider answered with a charge that does not match
   * the request (or does not fit the port); the key was parked.
   * @throws {IdempotencyKeyExpiredError} the key completed and was reaped to a tombstone; it is
   * not charged again.
   * An error thrown by one of your hooks passes through unchanged (the phase rolled back).
   */
  processCharge(key: string, request: ChargeRequest): Promise<ChargeOutcome>;
  /**
   * Refunds part or all of a captured charge, once for `key` however many times it is called.
   * The refund is reserved against the charge in the claim's commit: the refunds of a charge,
   * succeeded and in doubt together, never exceed what was captured, whatever the keys and the
   * concurrency; one that would is `refused` (stored and replayed like any outcome). A refund
   * whose provider call failed keeps its reservation until it is adopted or cancelled.
   * Throws as `processCharge` does; `InvalidConfigurationError` when the provider has no
   * `createRefund`/`findRefund`.
   */
  processRefund(key: string, request: RefundRequest): Promise<RefundOutcome>;
  /**
   * Captures all or part of a charge made with `capture: false`, once for `key`: at most one
   * capture per authorization (a second key is `refused`), never more than authorized.
   * Throws as `processCharge` does; `InvalidConfigurationError` when the provider has no
   * `capture`/`findCapture`.
   */
  processCapture(key: string, request: CaptureRequest): Promise<CaptureOutcome>;
  /**
   * One recovery pass: finishes abandoned charges (adopt, cancel or complete; see `onAbandoned`).
   * Safe to run from any number of processes at once.
   * @throws {InvalidRequestError} a `limit` or `concurrency` that is not a whole number from 1 up.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  sweep(options?: SweepOptions): Promise<SweepResult>;
  /**
   * Reaps completed keys older than `retentionMs` to tombstones (a retry is refused, never charged
   * again) and deletes tombstones older than `tombstoneRetentionMs`, in batches; returns how many
   * keys it reaped.
   * @throws {InvalidRequestError} a `limit` or `batchSize` that is not a whole number from 1 up.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  reap(options?: ReapOptions): Promise<number>;
  /**
   * Puts a key parked in `failed` back for the sweeper: its attempt count starts again and the
   * next sweep (after `sweepGraceMs`) or a client retry asks the provider and finishes it. A key
   * parked before its charge intent was written goes back to `started`. Every requeue is
   * audited (shown by `inspect`) with its `actor` and `reason`, both required. Fenced like
   * `resolve`: of a racing requeue and resolve, one wins. Returns false when no parked key
   * matched.
   * @throws {InvalidRequestError} a malformed merchant, key or operation, a missing or malformed
   * actor or reason; nothing written.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  requeue(target: RequeueTarget): Promise<boolean>;
  /**
   * Completes a key parked in `failed` with what a person found at the provider: `succeeded`
   * (with the provider's charge id), `declined` (with it, and the decline code) or `cancelled`
   * (no charge there). Stores the outcome as the engine would have (a retry replays it), runs
   * the `complete` or `cancel` hook in the same transaction, and audits who and why. Fenced: of
   * a racing resolve, requeue or second resolve, exactly one wins. Never touches a completed key.
   * A refund or capture key (`operation: 'refund' | 'capture'`) takes `succeeded` (with
   * `providerRefundId` / `providerCaptureId`), `failed` (with it, and `failureCode`) or
   * `cancelled`; its reservation on the charge settles as the engine's completion settles it,
   * and its `hooks.refund` / `hooks.capture` run.
   * @throws {InvalidRequestError} bad input, or a provider charge (or refund) id the merchant
   * already recorded for another charge (or refund); nothing written.
   * @throws {KeyNotResolvableError} the key is not parked (completed, at work, missing); nothing
   * written.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   * An error thrown by your hook passes through unchanged (nothing written, the key stays parked).
   */
  resolve(input: ResolveInput): Promise<ResolveResult>;
  /**
   * Everything stored about one key: recovery point, canonical request, attempts, lease, last
   * error, charge row, stored outcome, history and audit trail. Null when there is no such key.
   * @throws {InvalidRequestError} a malformed merchant, key or operation.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  inspect(target: KeyTarget): Promise<KeyInspection | null>;
  /**
   * One page of keys, oldest first, filtered by recovery point, merchant, operation and age;
   * pass `nextCursor` back as `cursor` for the next page (keyset pagination).
   * @throws {InvalidRequestError} a bad filter, limit (1–1000) or cursor.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  list(options: ListKeysOptions): Promise<KeyPage>;
  /**
   * Keys parked in `failed`, oldest first, with why: the provider could not answer past
   * `maxAttempts`, refused a provider answer, a lookup that cannot be trusted past the provider's
   * window, a hook that kept failing, or a stored request that cannot be read.
   * @throws {InvalidRequestError} a `limit` that is not a whole number from 1 up.
   * @throws {StoreUnavailableError} PostgreSQL is out of reach.
   */
  listStuck(options?: { limit?: number }): Promise<StuckKey[]>;
  /** Keys per recovery point, abandoned keys, and the age of the oldest unfinished key. */
  status(): Promise<KeyStatus>;
  /**
   * Runs sweep and reap passes every `intervalMs` (jittered) until `signal` aborts; resolves then.
   * Errors go to `onError` and never end the loop.
   */
  startRecovery(options?: RecoveryLoopOptions): Promise<void>;
  /**
   * Ends the pool the engine created from a connection string, and hands back any connection it
   * borrowed from a pool of yours (which stays open: ending it is yours to do).
   */
  close(): Promise<void>;
};

const DEFAULTS = {
  operation: 'charge',
  leaseMs: 30_000,
  providerTimeoutMs: 10_000,
  retentionMs: 72 * 3_600_000,
  tombstoneRetentionMs: 30 * 24 * 3_600_000,
} as const;

/** How often the unfinished-key gauges may query `status()`: never on every scrape. */
const KEY_GAUGE_SAMPLE_MS = 15_000;

/** Refunds and captures, as the phase machine runs them (charges are `CHARGE`). */
const REFUND_OPERATION = movementOperation(REFUND);
const CAPTURE_OPERATION = movementOperation(CAPTURE);

/**
 * Creates a charge engine. Run `migrate` on the database first.
 *
 * @throws {InvalidConfigurationError} for options that cannot work, such as
 * `providerTimeoutMs >= leaseMs`.
 */
export function createChargeEngine(options: ChargeEngineOptions): ChargeEngine {
  const env = buildEnv(options);
  const groupCommit = options.groupCommit ?? true;
  const recovery = recoverySettings(options, env.leaseMs);
  // Concurrent calls share one resolution, so one pool is made. One that failed (PostgreSQL
  // down) is forgotten: the next call tries again. Once closed, an engine that made its own pool
  // makes no other (nobody would end it) and says so.
  let resolved: Promise<StorePools> | undefined;
  let closed = false;
  const resolve = () => {
    if (closed) return Promise.reject(new InvalidConfigurationError('This engine was closed.'));
    return (resolved ??= withStore(() => resolvePool(options.pool))
      .then(async (pools) => {
        await observerReady;
        return pools;
      })
      /* eslint-disable no-restricted-syntax -- once per engine, not per charge */
      .then((pools) => {
        const ready = {
          ...pools,
          group: pools.pg && groupCommit ? createGroupCommit(pools.pg, env.tables) : null,
          waiters: pools.pg && env.inProgress !== 'reject' ? createKeyWaiters(pools.pg) : null,
        };
        if (!closed) env.readyPools = ready;
        const database = databaseNameOf(pools.pg);
        env.dbNamespace = database === null ? null : `${database}.${env.tables.schema}`;
        return ready;
      })
      /* eslint-enable no-restricted-syntax */
      .catch((error: unknown) => {
        resolved = undefined;
        throw error;
      }));
  };
  env.pools = resolve;
  env.pool = async () => (await resolve()).slonik;
  // Ready within a turn or two (it loads the OpenTelemetry API); the first calls wait for it, so
  // nothing goes unreported.
  let observing = false;
  // With `inProgress: { waitMs }`: the attempt running for a key and request in this engine,
  // which later callers of the same join instead of claiming again.
  const sharedAttempts: SharedAttempts<OperationOutcome> = new Map();
  // Stops the unfinished-key gauges when the engine closes (its pool ends with it).
  let stopKeyGauges = () => {};
  const observerReady = createObserver(options).then((observer) => {
    env.observer = observer;
    observing = true;
    if (closed) return;
    stopKeyGauges =
      observer.instruments?.observeKeys(
        async () => readUnfinishedKeys(await env.pool(), env.tables),
        KEY_GAUGE_SAMPLE_MS,
        env.tables.schema,
      ) ?? stopKeyGauges;
  });

  // Before its first call is answered, what this engine promises its callers (how long a key
  // replays, then is refused) is recorded for every reaper of the schema to keep (see
  // declareRetention). An engine made only to sweep, reap or look (the commands) promises
  // nothing and records nothing. A failed recording (PostgreSQL down) is tried again.
  let serving = false;
  let declaring: Promise<void> | undefined;
  const startServing = (): Promise<void> =>
    (declaring ??= observerReady
      .then(async () => {
        const pools = await resolve();
        await withStore(() =>
          declareRetention(pools.slonik, env.tables, env.operation, {
            retentionMs: env.retentionMs,
            tombstoneRetentionMs: env.tombstoneRetentionMs,
          }),
        );
        serving = true;
      })
      .catch((error: unknown) => {
        declaring = undefined;
        throw error;
      }));

  const processCharge = (key: string, request: ChargeRequest): Promise<ChargeOutcome> => {
    let v: ValidatedRequest;
    try {
      v = validateChargeRequest(key, request);
    } catch (error) {
      observeRefusal(env, CHARGE, key, request, error);
      return rejected(error);
    }
    if (!serving)
      return startServing().then(() => processOperation(env, CHARGE, v, sharedAttempts));
    return processOperation(env, CHARGE, v, sharedAttempts);
  };

  /** Validates a refund's or capture's request, counting it (and its span) when refused (400). */
  const validated = <T>(
    def: Parameters<typeof observeRefusal>[1],
    key: unknown,
    request: unknown,
    validate: () => T,
  ): T => {
    try {
      return validate();
    } catch (error) {
      if (error instanceof InvalidRequestError) observeRefusal(env, def, key, request, error);
      throw error;
    }
  };

  // Recovery passes wait for the observer, as the first calls do: none goes uncounted.
  const sweepObserved = async (sweepOptions?: SweepOptions): Promise<SweepResult> => {
    if (!observing) await observerReady;
    return sweep(env, recovery, sweepOptions);
  };
  const reapObserved = async (reapOptions?: ReapOptions): Promise<number> => {
    if (!observing) await observerReady;
    return reap(env, reapOptions);
  };

  const engine: ChargeEngine = {
    // Not an async function: one returning the attempt's promise would cost every charge a
    // promise and two turns of the microtask queue to adopt it. Invalid input still rejects.
    processCharge: (key, request) => {
      if (!observing) return observerReady.then(() => processCharge(key, request));
      return processCharge(key, request);
    },
    processRefund: async (key, request) => {
      if (!observing) await observerReady;
      const v = validated(REFUND_OPERATION, key, request, () =>
        validateRefundRequest(key, request),
      );
      REFUND.requireProvider(env.provider);
      if (!serving) await startServing();
      const outcome = await processOperation(env, REFUND_OPERATION, v, sharedAttempts);
      return {
        status: outcome.status,
        httpStatus: outcome.httpStatus,
        body: outcome.body,
        replayed: outcome.replayed,
        refundId: outcome.movementId,
        chargeId: outcome.chargeId,
        providerRefundId: outcome.providerMovementId,
      };
    },
    processCapture: async (key, request) => {
      if (!observing) await observerReady;
      const v = validated(CAPTURE_OPERATION, key, request, () =>
        validateCaptureRequest(key, request),
      );
      CAPTURE.requireProvider(env.provider);
      if (!serving) await startServing();
      const outcome = await processOperation(env, CAPTURE_OPERATION, v, sharedAttempts);
      return {
        status: outcome.status,
        httpStatus: outcome.httpStatus,
        body: outcome.body,
        replayed: outcome.replayed,
        captureId: outcome.movementId,
        chargeId: outcome.chargeId,
        providerCaptureId: outcome.providerMovementId,
      };
    },
    sweep: sweepObserved,
    reap: reapObserved,
    requeue: (target) => requeueParkedKey(env, target),
    resolve: (input) => resolveKey(env, input),
    inspect: (target) => inspectKey(env, target),
    list: (listOptions) => listKeys(env, listOptions),
    listStuck: async (listOptions) => {
      const limit = countOption('limit', listOptions?.limit, 100);
      return withStore(async () => listFailedKeys(await env.pool(), env.tables, limit));
    },
    status: async () => withStore(async () => readKeyStatus(await env.pool(), env.tables)),
    startRecovery: (loopOptions) =>
      // As engine.sweep and engine.reap: a first pass started with the engine is counted.
      startRecovery({ sweep: sweepObserved, reap: reapObserved }, loopOptions),
    close: async () => {
      closed = true;
      stopKeyGauges();
      // Telemetry of calls that ended moments ago, recorded before the caller shuts its SDK down.
      recordPendingTelemetry();
      env.readyPools = null;
      if (!resolved) return;
      // A pool that never came up has nothing to end.
      const pools = await resolved.catch(() => null);
      await pools?.waiters?.end();
      await pools?.end();
    },
  };
  // The HTTP edge's own 400s (see refusedAtEdge), counted as this engine's are.
  const countRefusal: RefusalCounter = (operation) => {
    const name = operation === 'charge' ? env.operation : operation;
    // Refused before this engine's first call, it is counted once its observer is ready.
    if (observing) env.observer.instruments?.invalid(name);
    else void observerReady.then(() => env.observer.instruments?.invalid(name));
  };
  Object.defineProperty(engine, REFUSED_AT_EDGE, { value: countRefusal });
  return engine;
}

function buildEnv(options: ChargeEngineOptions): EngineEnv {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidConfigurationError('createChargeEngine needs options: { pool, provider }');
  }
  // Checked here, not at the first charge: JavaScript callers and loose casts get no compiler.
  const { provider, pool } = options as Partial<ChargeEngineOptions>;
  if (typeof provider?.createCharge !== 'function' || typeof provider.findCharge !== 'function') {
    throw new InvalidConfigurationError(
      'provider is required: a PaymentProvider with createCharge and findCharge functions',
    );
  }
  if (!isPoolInput(pool)) {
    throw new InvalidConfigurationError(
      'pool is required: a connection string, a node-postgres Pool or a slonik pool',
    );
  }
  checkPoolString(pool);
  checkHooks(options.hooks);
  checkGroupCommit(options.groupCommit);
  checkTelemetry(options.telemetry);
  const leaseMs = options.leaseMs ?? DEFAULTS.leaseMs;
  const providerTimeoutMs = options.providerTimeoutMs ?? DEFAULTS.providerTimeoutMs;
  const retentionMs = options.retentionMs ?? DEFAULTS.retentionMs;
  const operation = options.operation ?? DEFAULTS.operation;
  const inProgress = options.inProgress ?? 'reject';
  requirePositiveInteger('leaseMs', leaseMs);
  requirePositiveInteger('providerTimeoutMs', providerTimeoutMs);
  requirePositiveInteger('retentionMs', retentionMs);
  if (providerTimeoutMs >= leaseMs) {
    throw new InvalidConfigurationError(
      `providerTimeoutMs (${providerTimeoutMs}) must be less than leaseMs (${leaseMs}): an attempt must have stopped waiting on the provider before its lease can be taken over`,
    );
  }
  const leaseMarginMs =
    options.leaseMarginMs ?? Math.min(1_000, Math.floor((leaseMs - providerTimeoutMs) / 2));
  if (!(Number.isInteger(leaseMarginMs) && leaseMarginMs >= 0)) {
    throw new InvalidConfigurationError('leaseMarginMs must be a non-negative integer');
  }
  if (providerTimeoutMs + leaseMarginMs >= leaseMs) {
    throw new InvalidConfigurationError(
      `providerTimeoutMs + leaseMarginMs (${providerTimeoutMs} + ${leaseMarginMs}) must be less than leaseMs (${leaseMs}): an attempt calls the provider only while its lease outlasts both`,
    );
  }
  const tombstoneRetentionMs =
    options.tombstoneRetentionMs ?? Math.max(DEFAULTS.tombstoneRetentionMs, 10 * retentionMs);
  requirePositiveInteger('tombstoneRetentionMs', tombstoneRetentionMs);
  if (tombstoneRetentionMs <= retentionMs) {
    throw new InvalidConfigurationError(
      `tombstoneRetentionMs (${tombstoneRetentionMs}) must exceed retentionMs (${retentionMs}): a reaped key must stay refused for longer than it replayed`,
    );
  }
  // One per engine: it keeps what it has read (see hostClock).
  const clock = options.clock ?? hostClock();
  if (typeof clock?.now !== 'function') {
    throw new InvalidConfigurationError('clock must have a now() function');
  }
  if (typeof operation !== 'string' || !/^[a-z][a-z0-9_.-]{0,62}$/.test(operation)) {
    throw new InvalidConfigurationError('operation must be a short lower-case name, e.g. "charge"');
  }
  if (operation === 'refund' || operation === 'capture') {
    throw new InvalidConfigurationError(
      `operation "${operation}" is taken by processRefund and processCapture; name charges otherwise`,
    );
  }
  if (inProgress !== 'reject') {
    if (!(Number.isInteger(inProgress.waitMs) && inProgress.waitMs >= 0)) {
      throw new InvalidConfigurationError('inProgress.waitMs must be a non-negative integer');
    }
  }
  return {
    pool: () => Promise.reject(new Error('pool not resolved')),
    pools: () => Promise.reject(new Error('pool not resolved')),
    readyPools: null,
    dbNamespace: null,
    tables: tablesIn(options.schema ?? DEFAULT_SCHEMA),
    provider: options.provider,
    operation,
    leaseMs,
    providerTimeoutMs,
    leaseMarginMs,
    retentionMs,
    tombstoneRetentionMs,
    clock,
    inProgress,
    hooks: options.hooks ?? {},
    faults: options.faults,
    separateClaim: options.separateClaim ?? false,
    observer: SILENT_OBSERVER,
  };
}

function recoverySettings(options: ChargeEngineOptions, leaseMs: number): SweepSettings {
  const graceMs = options.sweepGraceMs ?? leaseMs;
  const maxAttempts = options.maxAttempts ?? 5;
  const onAbandoned = options.onAbandoned ?? 'cancel';
  if (!(Number.isInteger(graceMs) && graceMs >= 0)) {
    throw new InvalidConfigurationError('sweepGraceMs must be a non-negative integer');
  }
  requirePositiveInteger('maxAttempts', maxAttempts);
  if (onAbandoned !== 'cancel' && onAbandoned !== 'complete') {
    throw new InvalidConfigurationError("onAbandoned must be 'cancel' or 'complete'");
  }
  return { graceMs, maxAttempts, onAbandoned };
}

function requirePositiveInteger(name: string, value: number): void {
  if (!(Number.isInteger(value) && value > 0)) {
    throw new InvalidConfigurationError(`${name} must be a positive integer, got ${String(value)}`);
  }
}
