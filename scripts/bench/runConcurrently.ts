import type { Measurement } from './BenchResults.js';
import { percentile } from './stats.js';

/** What one timed run measured. */
export type RunMeasure = {
  elapsedMs: number;
  /** One per item, in item order. */
  latenciesMs: Float64Array;
  /** CPU this process spent (user + system), for the client's share of the cost. */
  cpuMs: number;
};

/**
 * Runs `op` once per item with `concurrency` workers pulling from one queue, timing each call and
 * the whole. The workers share one iterator, so an item is taken exactly once, in order.
 */
export async function runConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  op: (item: T, index: number) => Promise<void>,
): Promise<RunMeasure> {
  const latenciesMs = new Float64Array(items.length);
  const queue = items.entries();
  const worker = async () => {
    for (const [index, item] of queue) {
      const start = performance.now();
      await op(item, index);
      latenciesMs[index] = performance.now() - start;
    }
  };
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  const elapsedMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  return { elapsedMs, latenciesMs, cpuMs: (cpu.user + cpu.system) / 1_000 };
}

/** A run of `calls` calls as a measurement: throughput, p50, p99 and client CPU per call. */
export function measurementOf(calls: number, run: RunMeasure): Measurement {
  return {
    calls,
    throughput: (calls / run.elapsedMs) * 1_000,
    p50Ms: percentile(run.latenciesMs, 50),
    p99Ms: percentile(run.latenciesMs, 99),
    clientCpuUsPerCall: (run.cpuMs * 1_000) / calls,
  };
}
