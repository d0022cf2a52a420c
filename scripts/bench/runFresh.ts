import { randomUUID } from 'node:crypto';
import type { BenchProvider } from './createBenchProvider.js';
import type { Measurement } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { Design } from './Design.js';
import { measurementOf, runConcurrently } from './runConcurrently.js';

/**
 * New keys, each charged once, by `concurrency` callers at a time. Keys and requests are made
 * before the clock starts, so only the charge is timed.
 */
export async function runFresh(
  design: Design,
  provider: BenchProvider,
  options: { calls: number; concurrency: number },
): Promise<Measurement> {
  const prefix = `fresh-${randomUUID()}`;
  const items = Array.from({ length: options.calls }, (_, i) => ({
    key: `${prefix}-${i}`,
    request: benchRequest(i),
  }));
  const before = provider.counts().charges;
  const run = await runConcurrently(items, options.concurrency, async ({ key, request }) => {
    const outcome = await design.charge(key, request);
    if (outcome.kind !== 'charged') {
      throw new Error(`${design.name}: a fresh key answered ${outcome.kind}`);
    }
  });
  const made = provider.counts().charges - before;
  if (made !== options.calls) {
    throw new Error(`${design.name}: ${options.calls} fresh keys made ${made} provider charges`);
  }
  return measurementOf(options.calls, run);
}
