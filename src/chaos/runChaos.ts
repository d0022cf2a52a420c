import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PgPoolLike } from '../store/pgPoolLike.js';
import { createChargeEngine } from '../engine/createChargeEngine.js';
import {
  startFakeProviderServer,
  type FakeProviderServer,
} from '../provider/fakeProviderServer.js';
import { seededRandom } from '../provider/seededRandom.js';
import { migrate } from '../store/migrate.js';
import { createEnginePool } from '../store/resolvePool.js';
import type { ChaosProgress, ChaosReport } from './ChaosReport.js';
import { chaosMerchants, mixSeed } from './chaosOperation.js';
import { createChaosPlan } from './createChaosPlan.js';
import { createChaosEngines, type ChaosEngines } from './createChaosEngines.js';
import { createChaosTally } from './createChaosTally.js';
import { addGroupCommitCounts, emptyGroupCommitCounts } from './countGroupCommit.js';
import {
  loadChaosProvider,
  providerModuleUrl,
  type LoadedChaosProvider,
} from './loadChaosProvider.js';
import { reconcile, type MovementLedger } from './reconcile.js';
import {
  resolveChaosOptions,
  type ChaosOptions,
  type ResolvedChaosOptions,
} from './resolveChaosOptions.js';
import { runOperations } from './runOperations.js';
import { runWorkerFleet } from './runWorkerFleet.js';
import { addSweep, emptySweep, sweepUntilIdle } from './sweepUntilIdle.js';
import { restoreWallClock } from './wallClock.js';
import { PROVIDER_SILENT_REASON_PREFIX } from '../recovery/sweep.js';
import type { ChargeEngine } from '../engine/createChargeEngine.js';

/** Streams of the run's seed, one per use, so one use drawing more shifts no other. */
const STREAM = { inProcess: 1, returning: 2, kills: 3, outages: 4, late: 5 } as const;
/** Past a lease's end, so PostgreSQL's clock has surely passed it too. */
const LEASE_MARGIN_MS = 250;

/**
 * Runs a chaos experiment and reconciles the result: `charges` operations, each one key and one
 * request (charges, and, with `movementRate`, captures and refunds of them once they succeeded),
 * whose clients retry with the same key through injected crashes (`crashRate`), worker
 * processes killed with `SIGKILL` (`killRate`) and a fake provider that hangs, fails before and
 * after charging, resets connections, rate-limits and declines. Then it lets every lease run
 * out, sweeps until idle, lets clients that gave up come back once, and checks the provider's
 * records against the engine's tables: exactly one charge (refund, capture) per key, nothing
 * lost, every outcome replayed byte for byte, and per charge refunds within the capture within
 * the authorization, captured once, its totals the provider's, no reservation left held.
 *
 * The final sweep uses `onAbandoned: 'cancel'`, the engine's default: a charge its client walked
 * away from before the provider made it is cancelled, not made. A cancelled operation is a
 * settled one; its client, coming back, is answered 410 from the stored outcome, and the
 * reconciler checks that the provider never charged it.
 *
 * The clients of each process (a worker, or this one) share that process's engines, as the calls
 * of one server would (see {@link createChaosEngines}): group commit batches their claims and
 * completions, and a client that finds a key in progress waits for it (or, in every other worker,
 * is refused with a 409), woken by the holder's completion. The report counts both.
 *
 * The provider server runs in this process; workers reach it over HTTP and PostgreSQL with their
 * own pools. Without `providerModule` they use the built-in HTTP adapter; see
 * {@link ChaosProviderModule} to run your own adapter instead.
 *
 * Not a test of speed: leases are short and clients wait out every fault.
 *
 * @throws {InvalidConfigurationError} an option out of range (see {@link ChaosOptions}).
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 * @throws {Error} the provider module cannot be loaded, or a worker process cannot start.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const o = resolveChaosOptions(options);
  const startedAt = performance.now();
  const pool = await createEnginePool(o.databaseUrl, { maximumPoolSize: o.poolSize });
  try {
    await migrate(pool, { schema: o.schema });
    const server = await startFakeProviderServer({
      seed: o.seed,
      rates: o.providerFaults,
      latencyMs: o.latencyMs,
      idempotencyWindowMs: o.idempotencyWindowMs,
    });
    try {
      const moduleUrl =
        o.providerModule === undefined ? undefined : providerModuleUrl(o.providerModule);
      const loaded = await loadChaosProvider(moduleUrl, server.url, o.providerModule);
      // The harness's own clients (in process, and every client's return visit) share these.
      const engines = await createChaosEngines({
        pool,
        databaseUrl: o.databaseUrl,
        provider: loaded.provider,
        schema: o.schema,
        leaseMs: o.leaseMs,
        providerTimeoutMs: o.providerTimeoutMs,
        retentionMs: o.retentionMs,
        waitMs: o.waitMs,
        clientsWait: true,
      });
      try {
        return await runAgainst(o, pool, server, startedAt, { moduleUrl, loaded, engines });
      } finally {
        await engines.close();
      }
    } finally {
      restoreWallClock();
      await server.close();
    }
  } finally {
    await pool.end();
  }
}

/** The provider the harness loaded, and the engines its own clients share. */
type HarnessClients = {
  moduleUrl: string | undefined;
  loaded: LoadedChaosProvider;
  engines: ChaosEngines;
};

async function runAgainst(
  o: ResolvedChaosOptions,
  pool: PgPoolLike,
  server: FakeProviderServer,
  startedAt: number,
  { moduleUrl, loaded, engines }: HarnessClients,
): Promise<ChaosReport> {
  // Random, not seeded: a replay with the same seed must not collide with the earlier run's keys.
  const runId = randomBytes(4).toString('hex');
  const movementRate = canMove(loaded) ? o.movementRate : 0;
  const plan = createChaosPlan({ runId, seed: o.seed, operations: o.charges, movementRate });
  const tally = createChaosTally(plan);
  let kills = 0;
  let phase: ChaosProgress['phase'] = 'charging';
  const report = () => o.onProgress(tally.progress(phase, kills));
  // Outages need the harness's own provider server; a user's module has its own failures.
  const outages = seededRandom(mixSeed(o.seed, STREAM.outages));
  let outageEndsAt = 0;
  const lateRandom = seededRandom(mixSeed(o.seed, STREAM.late));
  const lateVisits = new Set<number>();
  const sink = {
    attempt: (event: Parameters<typeof tally.sink.attempt>[0]) => {
      tally.sink.attempt(event);
      report();
    },
    ended: (end: Parameters<typeof tally.sink.ended>[0]) => {
      tally.sink.ended(end);
      if (end.result === 'settled' && lateRandom() < o.lateRetryRate) lateVisits.add(end.op);
      if (!loaded.ledger && outages() < o.outageRate && performance.now() >= outageEndsAt) {
        server.startOutage(o.outageMs);
        outageEndsAt = performance.now() + o.outageMs;
      }
      report();
    },
  };
  const client = {
    schema: o.schema,
    runId,
    seed: o.seed,
    concurrency: o.concurrency,
    leaseMs: o.leaseMs,
    providerTimeoutMs: o.providerTimeoutMs,
    retentionMs: o.retentionMs,
    maxClientAttempts: o.maxClientAttempts,
  };
  const faultRates = {
    crashRate: o.crashRate,
    stallRate: o.stallRate,
    holdRate: o.holdRate,
    clockStepRate: o.clockStepRate,
    abandonRate: o.abandonRate,
    duplicateRate: o.duplicateRate,
  };
  // What the clients of this process run from; workers rebuild the plan from its settings.
  const planned = { plan, known: (op: number) => tally.known(op) };
  const everyOperation = Array.from({ length: o.charges }, (_, i) => i);
  let fleet = { processesKilled: 0, processesStarted: 0, groupCommit: emptyGroupCommitCounts() };
  // A sweeper and a reaper run while the clients charge: they take over keys whose lease ran
  // out under a stalled attempt, and reap keys clients may still retry.
  const recovery = createChargeEngine({
    pool,
    provider: loaded.provider,
    schema: o.schema,
    leaseMs: o.leaseMs,
    providerTimeoutMs: o.providerTimeoutMs,
    retentionMs: o.retentionMs,
    // The fake provider's worst latency: a request in flight when a lease ended has landed.
    sweepGraceMs: o.latencyMs.max,
    onAbandoned: 'cancel',
    // The default: during an outage it parks keys the provider cannot answer for; the harness
    // requeues those afterwards, as a person would (see below).
    maxAttempts: 5,
  });
  const background = runBackgroundRecovery(recovery, o.sweepEveryMs);
  report();

  try {
    if (o.workers === 0) {
      await runOperations(
        {
          ...client,
          ...planned,
          ...faultRates,
          engines,
          random: seededRandom(mixSeed(o.seed, STREAM.inProcess)),
        },
        everyOperation,
        sink,
      );
    } else {
      fleet = await runWorkerFleet({
        workers: o.workers,
        killRate: o.killRate,
        random: seededRandom(mixSeed(o.seed, STREAM.kills)),
        plan: {
          ...client,
          ...faultRates,
          planSize: plan.size,
          movementRate,
          databaseUrl: o.databaseUrl,
          poolSize: o.poolSize,
          waitMs: o.waitMs,
          providerBaseUrl: server.url,
          providerModuleUrl: moduleUrl ?? null,
        },
        operations: everyOperation,
        familyOf: (op) => plan.familyOf(op),
        known: (op) => tally.known(op),
        sink,
        onKill: () => {
          kills += 1;
          report();
        },
      });
    }
  } finally {
    await background.stop();
  }
  restoreWallClock();

  // Every attempt has ended, but crashed and killed ones still hold their keys' leases.
  phase = 'sweeping';
  report();
  // The provider is healthy again once its outage is over.
  await sleep(Math.max(o.leaseMs + LEASE_MARGIN_MS, outageEndsAt - performance.now()));
  const sweeper = createChargeEngine({
    pool,
    provider: loaded.provider,
    schema: o.schema,
    leaseMs: o.leaseMs,
    providerTimeoutMs: o.providerTimeoutMs,
    sweepGraceMs: 0,
    onAbandoned: 'cancel',
    // The default: clients' retries through faults and outages count as attempts too, so most
    // keys left here are past it. A sweeper must still ask the provider first and finish them;
    // it parks only what the provider cannot answer for.
    maxAttempts: 5,
  });
  const sweep = await sweepUntilIdle(sweeper);
  // A person reads listStuck(): keys parked because the provider could not answer (an outage)
  // go back to the sweeper now that it can; anything else parked stays for the reconciler.
  const requeued = await requeueSilentProviderKeys(sweeper, chaosMerchants(runId));
  if (requeued > 0) addSweep(sweep, await sweepUntilIdle(sweeper));

  // The clients that walked away or ran out of attempts come back once: each must now be
  // answered from the stored outcome (or, for a key released at `started`, charge afresh).
  phase = 'returning';
  report();
  const returning = {
    ...client,
    ...planned,
    engines,
    crashRate: 0,
    stallRate: 0,
    holdRate: 0,
    clockStepRate: 0,
    abandonRate: 0,
    duplicateRate: 0,
    random: seededRandom(mixSeed(o.seed, STREAM.returning)),
  };
  await runOperations(returning, tally.unsettled(), sink);
  if (tally.unsettled().length > 0) {
    // Some gave up again (a provider that keeps failing): finish what they left behind.
    await sleep(o.leaseMs + LEASE_MARGIN_MS);
    addSweep(sweep, await sweepUntilIdle(sweeper));
  }

  // Some clients come back once more, after the reaper took their keys: refused or replayed,
  // never charged again. What they see goes to the reconciler with everything else.
  const late = { visits: lateVisits.size, expired: 0, replayed: 0 };
  if (lateVisits.size > 0) {
    await sleep(o.retentionMs + LEASE_MARGIN_MS);
    await recovery.reap({ limit: Number.MAX_SAFE_INTEGER });
    await runOperations(returning, [...lateVisits], {
      attempt: (event) => {
        if (event.kind === 'terminal' && event.status === 'expired') late.expired += 1;
        else {
          if (event.kind === 'outcome' && event.replayed) late.replayed += 1;
          sink.attempt(event);
        }
      },
      ended: () => {},
    });
  }

  phase = 'reconciling';
  report();
  const backgroundTotals = await background.stop();
  const ledger = loaded.ledger ? await loaded.ledger() : server.ledger();
  const movementLedger = await movementLedgerOf(loaded, server, movementRate);
  const merchantIds = chaosMerchants(runId);
  const reconciled = await reconcile({
    pool,
    schema: o.schema,
    providerLedger: ledger,
    merchantIds,
    // The harness's own fake provider charges only for this run; a ledger from the user's
    // module may hold others' charges too.
    ledgerIsOnlyTheirs: !loaded.ledger,
    expectFinished: true,
    observations: tally.observations(),
    ...(movementLedger ? { movementLedger } : {}),
  });
  const violations = reconciled.violations;
  const counts = tally.counts();
  const stats = server.stats();
  const groupCommit = engines.counts();
  addGroupCommitCounts(groupCommit, fleet.groupCommit);
  const unsettled = tally.unsettled().map((op) => {
    const { key, merchantId, kind } = plan.operation(op);
    return { merchantId, key, operation: kind, lastError: tally.lastError(op) };
  });
  return {
    ok:
      violations.length === 0 &&
      counts.unexpectedErrors.length === 0 &&
      unsettled.length === 0 &&
      counts.holds.blocked === 0 &&
      counts.holds.otherwise === 0,
    runId,
    seed: o.seed,
    schema: o.schema,
    durationMs: Math.round(performance.now() - startedAt),
    config: {
      workers: o.workers,
      concurrency: o.concurrency,
      movementRate,
      killRate: o.workers === 0 ? 0 : o.killRate,
      crashRate: o.crashRate,
      stallRate: o.stallRate,
      holdRate: o.holdRate,
      clockStepRate: o.clockStepRate,
      abandonRate: o.abandonRate,
      duplicateRate: o.duplicateRate,
      waitMs: o.waitMs,
      outageRate: loaded.ledger ? 0 : o.outageRate,
      outageMs: o.outageMs,
      retentionMs: o.retentionMs,
      lateRetryRate: o.lateRetryRate,
      sweepEveryMs: o.sweepEveryMs,
      poolSize: o.poolSize,
      providerFaults: o.providerFaults,
      latencyMs: o.latencyMs,
      // JSON has no Infinity.
      idempotencyWindowMs: Number.isFinite(o.idempotencyWindowMs) ? o.idempotencyWindowMs : null,
      leaseMs: o.leaseMs,
      providerTimeoutMs: o.providerTimeoutMs,
      providerModule: o.providerModule ?? null,
      ledger: loaded.ledger ? 'provider-module' : 'fake-provider',
    },
    charges: o.charges,
    operations: plan.counts,
    settled: counts.settled,
    outcomes: counts.outcomes,
    movements: counts.movements,
    refusals: counts.refusals,
    abandoned: counts.abandoned,
    attempts: counts.attempts,
    retries: counts.retries,
    duplicates: counts.duplicates,
    groupCommit,
    waits: counts.waits,
    retryableErrors: counts.retryableErrors,
    crashes: counts.crashes,
    stalls: counts.stalls,
    suspends: counts.suspends,
    holds: counts.holds,
    clockSteps: counts.clockSteps,
    outages: { started: stats.outages, refusedRequests: stats.outageRefusals },
    processesKilled: fleet.processesKilled,
    processesStarted: fleet.processesStarted,
    providerFaults: stats.faults,
    providerCharges: ledger.length,
    providerMovements: {
      refunds: countByStatus(movementLedger?.refunds ?? []),
      captures: countByStatus(movementLedger?.captures ?? []),
    },
    replays: counts.replays,
    adoptions: {
      total: counts.adoptions + sweep.adopted + backgroundTotals.sweep.adopted,
      byClients: counts.adoptions,
      bySweep: sweep.adopted + backgroundTotals.sweep.adopted,
    },
    sweep,
    requeued,
    background: backgroundTotals,
    late,
    parked: reconciled.parked,
    violations,
    unexpectedErrors: counts.unexpectedErrors,
    unsettled,
  };
}

/**
 * Sweeps and reaps every `everyMs` until stopped; `stop()` waits for the pass in progress and
 * returns the totals (and may be called again for them). A pass that fails (PostgreSQL busy)
 * is counted and the loop goes on.
 */
function runBackgroundRecovery(engine: ChargeEngine, everyMs: number) {
  const totals = { sweep: emptySweep(), reaped: 0, errors: 0 };
  const stopping = new AbortController();
  const loop = (async () => {
    if (everyMs === 0) return;
    while (!stopping.signal.aborted) {
      try {
        addSweep(totals.sweep, { ...(await engine.sweep({ limit: 100 })), passes: 1 });
        totals.reaped += await engine.reap({ limit: 1_000 });
      } catch {
        totals.errors += 1;
      }
      await sleep(everyMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  })();
  return {
    stop: async () => {
      stopping.abort();
      await loop;
      return totals;
    },
  };
}

/** Requeues this run's keys parked because the provider could not answer; returns how many. */
async function requeueSilentProviderKeys(
  engine: ChargeEngine,
  merchantIds: readonly string[],
): Promise<number> {
  const ours = new Set(merchantIds);
  const stuck = await engine.listStuck({ limit: 100_000 });
  let requeued = 0;
  for (const key of stuck) {
    if (!ours.has(key.merchantId) || !key.reason.startsWith(PROVIDER_SILENT_REASON_PREFIX))
      continue;
    const target = {
      merchantId: key.merchantId,
      key: key.key,
      operation: key.operation,
      // As the person on call would, once the provider answers again: audited like theirs.
      actor: 'chaos harness',
      reason: 'the provider answers again',
    };
    if (await engine.requeue(target)) requeued += 1;
  }
  return requeued;
}

/**
 * Whether the run can refund and capture: the provider can, and the reconciler can read what it
 * did (the harness's fake server's books, or the module's `movementLedger`).
 */
function canMove(loaded: LoadedChaosProvider): boolean {
  const { provider } = loaded;
  const able =
    typeof provider.createRefund === 'function' &&
    typeof provider.findRefund === 'function' &&
    typeof provider.capture === 'function' &&
    typeof provider.findCapture === 'function';
  return able && (loaded.ledger === undefined || loaded.movementLedger !== undefined);
}

/** The provider's refunds and captures, for the reconciler; none when the run made none. */
async function movementLedgerOf(
  loaded: LoadedChaosProvider,
  server: FakeProviderServer,
  movementRate: number,
): Promise<MovementLedger | undefined> {
  if (movementRate === 0) return undefined;
  if (loaded.movementLedger) return loaded.movementLedger();
  return { refunds: server.refundLedger(), captures: server.captureLedger() };
}

function countByStatus(entries: MovementLedger['refunds']): { succeeded: number; failed: number } {
  const counts = { succeeded: 0, failed: 0 };
  for (const entry of entries) counts[entry.status] += 1;
  return counts;
}
