// A chaos worker process, forked by the harness (runWorkerFleet) with an IPC channel. It runs the
// operations it is given against PostgreSQL, with its own pool and engines, and the fake provider
// over HTTP, and reports every attempt. The harness may SIGKILL it at any moment: nothing here may
// depend on finishing, which is the point.
import type { PgPoolLike } from '../store/pgPoolLike.js';
import { seededRandom } from '../provider/seededRandom.js';
import { createEnginePool } from '../store/resolvePool.js';
import { mixSeed } from './chaosOperation.js';
import { createChaosPlan } from './createChaosPlan.js';
import { createChaosEngines, type ChaosEngines } from './createChaosEngines.js';
import { loadChaosProvider } from './loadChaosProvider.js';
import { runOperations } from './runOperations.js';
import type { FromWorker, ToWorker, WorkerPlan } from './workerProtocol.js';

const stopping = new AbortController();
let pool: PgPoolLike | undefined;
let engines: ChaosEngines | undefined;

function send(message: FromWorker): void {
  // The parent may be gone; then there is nobody to tell.
  if (process.connected) process.send?.(message);
}

async function run(plan: WorkerPlan): Promise<void> {
  pool = await createEnginePool(plan.databaseUrl, { maximumPoolSize: plan.poolSize });
  const { provider } = await loadChaosProvider(
    plan.providerModuleUrl ?? undefined,
    plan.providerBaseUrl,
  );
  const shared = await createChaosEngines({
    pool,
    databaseUrl: plan.databaseUrl,
    provider,
    schema: plan.schema,
    leaseMs: plan.leaseMs,
    providerTimeoutMs: plan.providerTimeoutMs,
    retentionMs: plan.retentionMs,
    waitMs: plan.waitMs,
    // Workers take turns: in every other one the clients wait on keys in progress and second
    // submissions are refused at once; in the others, the other way round.
    clientsWait: plan.slot % 2 === 0,
  });
  engines = shared;
  send({ type: 'ready' });
  const known = new Map(plan.known);
  await runOperations(
    {
      ...plan,
      plan: createChaosPlan({
        runId: plan.runId,
        seed: plan.seed,
        operations: plan.planSize,
        movementRate: plan.movementRate,
      }),
      known: (op) => known.get(op),
      engines: shared,
      random: seededRandom(mixSeed(plan.seed, plan.slot + 1, plan.generation + 1)),
      signal: stopping.signal,
    },
    plan.operations,
    {
      attempt: (event) => send({ type: 'attempt', event }),
      ended: (end) => {
        send({ type: 'ended', end });
        send({ type: 'groupCommit', counts: shared.counts() });
      },
    },
  );
  send({ type: 'groupCommit', counts: shared.counts() });
  send({ type: 'idle' });
}

/** Lets the process end on its own: no engines, no pool, no IPC channel, no client loops left. */
async function shutDown(): Promise<void> {
  stopping.abort();
  const closing = engines;
  const ending = pool;
  engines = undefined;
  pool = undefined;
  await closing?.close().catch(() => undefined);
  await ending?.end().catch(() => undefined);
  if (process.connected) process.disconnect();
}

process.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'start':
      run(message.plan).catch((error: unknown) => {
        send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
        void shutDown();
      });
      return;
    case 'close':
      void shutDown();
      return;
  }
});
// The parent died or let go: stop rather than charge for nobody.
process.on('disconnect', () => void shutDown());
