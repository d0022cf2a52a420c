import { chaosOperation } from './chaosOperation.js';
import type { OperationSink } from './OperationSink.js';
import { runOperation, type ClientSettings } from './runOperation.js';

/** Runs the operations of `indexes`, `concurrency` clients at a time, each to its end. */
export async function runOperations(
  settings: ClientSettings & { runId: string; seed: number; concurrency: number },
  indexes: readonly number[],
  sink: OperationSink,
): Promise<void> {
  let next = 0;
  const client = async () => {
    while (next < indexes.length && !settings.signal?.aborted) {
      const index = indexes[next++] as number;
      await runOperation(settings, chaosOperation(settings.runId, settings.seed, index), sink);
    }
  };
  await Promise.all(Array.from({ length: Math.min(settings.concurrency, indexes.length) }, client));
}
