import { randomUUID } from 'node:crypto';
import type { BenchProvider } from './createBenchProvider.js';
import type { Measurement, StormTally } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { Design } from './Design.js';
import { runConcurrently } from './runConcurrently.js';
import { percentile } from './stats.js';

/**
 * A storm: `callersPerKey` callers fire at one new key in the same instant, as a retrying client
 * fleet does; `concurrency` keys are stormed at a time. Each caller is timed on its own: a loser
 * must be answered (409 or a replay) without queueing behind the winner's provider call.
 *
 * @throws when any key was charged other than exactly once, or answered inconsistently.
 */
export async function runStorm(
  design: Design,
  provider: BenchProvider,
  options: { keys: number; callersPerKey: number; concurrency: number },
): Promise<Measurement> {
  const prefix = `storm-${randomUUID()}`;
  const items = Array.from({ length: options.keys }, (_, i) => ({
    key: `${prefix}-${i}`,
    request: benchRequest(i),
  }));
  const callers = options.keys * options.callersPerKey;
  const latenciesMs = new Float64Array(callers);
  const tally: StormTally = {
    keys: options.keys,
    callersPerKey: options.callersPerKey,
    charged: 0,
    replayed: 0,
    inUse: 0,
    providerCreateCalls: 0,
    providerCharges: 0,
  };
  const before = provider.counts();
  const run = await runConcurrently(items, options.concurrency, async ({ key, request }, k) => {
    const chargeIds = new Set<string>();
    let charged = 0;
    // All callers start in this tick, before any of them has reached the database.
    await Promise.all(
      Array.from({ length: options.callersPerKey }, async (_, c) => {
        const start = performance.now();
        const outcome = await design.charge(key, request);
        latenciesMs[k * options.callersPerKey + c] = performance.now() - start;
        switch (outcome.kind) {
          case 'charged':
            charged += 1;
            chargeIds.add(outcome.chargeId);
            return;
          case 'replayed':
            tally.replayed += 1;
            chargeIds.add(outcome.chargeId);
            return;
          case 'inUse':
            tally.inUse += 1;
            return;
          case 'reused':
            throw new Error(`${design.name}: a storm caller was refused as a different request`);
        }
      }),
    );
    if (charged !== 1 || chargeIds.size !== 1) {
      throw new Error(
        `${design.name}: key ${k} charged by ${charged} callers, answered with ${chargeIds.size} charges`,
      );
    }
    tally.charged += 1;
  });
  const after = provider.counts();
  tally.providerCreateCalls = after.createCalls - before.createCalls;
  tally.providerCharges = after.charges - before.charges;
  if (tally.providerCreateCalls !== options.keys || tally.providerCharges !== options.keys) {
    throw new Error(
      `${design.name}: ${options.keys} stormed keys made ${tally.providerCreateCalls} provider calls and ${tally.providerCharges} charges`,
    );
  }
  return {
    calls: callers,
    throughput: (options.keys / run.elapsedMs) * 1_000,
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    clientCpuUsPerCall: (run.cpuMs * 1_000) / callers,
    storm: tally,
  };
}
