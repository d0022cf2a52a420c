// A chaos worker process, forked by the harness (runWorkerFleet) with an IPC channel. It runs the
// operations it is given against PostgreSQL, with its own pool, and the fake provider over HTTP,
// and reports every attempt. The harness may SIGKILL it at any moment: nothing here may depend on
// finishing, which is the point.
import type { PgPoolLike } from '../store/pgPoolLike.js';
import { seededRandom } from '../provider/seededRandom.js';
import { createEnginePool } from '../store/resolvePool.js';
import { mixSeed } from './chaosOperation.js';
import { loadChaosProvider } from './loadChaosProvider.js';
import { runOperations } from './runOperations.js';
import type { FromWorker, ToWorker, WorkerPlan } from './workerProtocol.js';

const stopping = new AbortController();
let pool: PgPoolLike | undefined;

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
  send({ type: 'ready' });
  await runOperations(
    {
      ...plan,
      pool,
      provider,
      random: seededRandom(mixSeed(plan.seed, plan.slot + 1, plan.generation + 1)),
      signal: stopping.signal,
    },
    plan.operations,
    {
      attempt: (event) => send({ type: 'attempt', event }),
      ended: (end) => send({ type: 'ended', end }),
    },
  );
  send({ type: 'idle' });
}

/** Lets the process end on its own: no pool, no IPC channel, no client loops left. */
async function shutDown(): Promise<void> {
  stopping.abort();
  const ending = pool;
  pool = undefined;
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
