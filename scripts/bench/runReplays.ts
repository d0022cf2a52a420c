import { randomUUID } from 'node:crypto';
import type { ChargeRequest } from '../../src/request.js';
import type { Measurement } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { Design } from './Design.js';
import { measurementOf, runConcurrently } from './runConcurrently.js';

/** A completed key and the charge a replay must name. */
export type SeededKey = { key: string; request: ChargeRequest; chargeId: string };

/** Charges `keys` new keys through `design` (not timed), for replays to ask again. */
export async function seedReplayKeys(design: Design, keys: number): Promise<SeededKey[]> {
  const prefix = `replay-${randomUUID()}`;
  const seeded = Array.from({ length: keys }, (_, i) => ({
    key: `${prefix}-${i}`,
    request: benchRequest(i),
    chargeId: '',
  }));
  await runConcurrently(seeded, 8, async (item) => {
    const outcome = await design.charge(item.key, item.request);
    if (outcome.kind !== 'charged') {
      throw new Error(`${design.name}: seeding a replay key answered ${outcome.kind}`);
    }
    item.chargeId = outcome.chargeId;
  });
  return seeded;
}

/** Completed keys asked again, `calls` times in turn, by `concurrency` callers at a time. */
export async function runReplays(
  design: Design,
  seeded: readonly SeededKey[],
  options: { calls: number; concurrency: number },
): Promise<Measurement> {
  const items = Array.from({ length: options.calls }, (_, i) => seeded[i % seeded.length]);
  const run = await runConcurrently(items, options.concurrency, async (item) => {
    if (!item) throw new Error('no seeded key to replay');
    const outcome = await design.charge(item.key, item.request);
    if (outcome.kind !== 'replayed' || outcome.chargeId !== item.chargeId) {
      throw new Error(`${design.name}: a replay answered ${outcome.kind}`);
    }
  });
  return measurementOf(options.calls, run);
}
