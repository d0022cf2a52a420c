import { randomUUID } from 'node:crypto';
import { startWireProxy } from '../../test/support/wireProxy.js';
import type { BatchedWireCost } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createDesigns, endDesigns } from './createDesigns.js';
import type { DesignName } from './Design.js';
import { runConcurrently } from './runConcurrently.js';

/** Calls per measurement at each concurrency: enough for batches to settle to their size. */
export const BATCHED_WIRE_CALLS = 640;
const CALLS = BATCHED_WIRE_CALLS;

/** The designs whose cost per call under concurrency is reported: group commit and the floor. */
const MEASURED: readonly DesignName[] = ['engine', 'floor'];

/**
 * Round trips and commits per call under concurrency, counted on the wire through a counting
 * proxy, on the bench's pool size: with group commit, one round trip and one commit serve a
 * whole batch, so the cost per call is what the batch size amortizes it to. The floor, one
 * statement per call, is beside it.
 * The proxy adds a hop of its own, so batch sizes here are indicative, not those of the timed
 * runs. Null when the connection is encrypted and the proxy cannot read it.
 */
export async function measureBatchedRoundTrips(
  url: string,
  provider: BenchProvider,
  names: readonly DesignName[],
  poolSize: number,
  concurrencies: readonly number[],
): Promise<BatchedWireCost[] | null> {
  const measured = MEASURED.filter((name) => names.includes(name));
  if (measured.length === 0) return [];
  const proxy = await startWireProxy(url);
  const designs = await createDesigns(proxy.url, measured, poolSize, provider);
  try {
    const results: BatchedWireCost[] = [];
    for (const design of designs) {
      const prefix = `wire-batched-${randomUUID()}`;
      for (let i = 0; i < (design.instances ?? 1); i++) {
        await design.charge(`${prefix}-first-${i}`, benchRequest(i));
      }
      for (const concurrency of concurrencies) {
        const keys = Array.from({ length: CALLS }, (_, i) => `${prefix}-c${concurrency}-${i}`);
        const cost = async (kind: 'charged' | 'replayed') => {
          proxy.reset();
          await runConcurrently(keys, concurrency, async (key, i) => {
            const outcome = await design.charge(key, benchRequest(i));
            if (outcome.kind !== kind) throw new Error(`${design.name}: expected ${kind}`);
          });
          const { roundTrips, endedIdle } = proxy.stats();
          return {
            roundTrips: roundTrips / CALLS,
            transactions: endedIdle / CALLS,
          };
        };
        const fresh = await cost('charged');
        const replay = await cost('replayed');
        if (fresh.roundTrips === 0) return null;
        results.push({ design: design.name, concurrency, fresh, replay });
      }
    }
    return results;
  } finally {
    await endDesigns(designs);
    await proxy.close();
  }
}
