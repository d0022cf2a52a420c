import type { ReapOptions } from './reap.js';
import type { SweepOptions, SweepResult } from './sweep.js';
import { pause } from '../pause.js';

/** Options of {@link startRecovery}. */
export type RecoveryLoopOptions = {
  /**
   * Pause between passes; each pause is jittered ±25% so many workers do not move in step.
   * @defaultValue `10_000`
   */
  intervalMs?: number;
  /** Stops the loop; the pass under way finishes first. */
  signal?: AbortSignal;
  /** Receives every error of a pass. The loop keeps going; the host process never crashes. */
  onError?: (error: unknown) => void;
  /** Receives each pass's results (for metrics). */
  onPass?: (pass: { swept: SweepResult; reaped: number }) => void;
  sweep?: SweepOptions;
  reap?: ReapOptions;
};

/** What the loop runs each pass. */
export type RecoveryWork = {
  sweep(options?: SweepOptions): Promise<SweepResult>;
  reap(options?: ReapOptions): Promise<number>;
};

/**
 * Runs sweep and reap passes until `signal` aborts. Resolves once stopped. A pass that finds a
 * full batch of abandoned keys runs again at once instead of waiting out the interval.
 */
export async function startRecovery(
  work: RecoveryWork,
  options: RecoveryLoopOptions = {},
  random: () => number = Math.random,
): Promise<void> {
  const intervalMs = options.intervalMs ?? 10_000;
  const limit = options.sweep?.limit ?? 100;
  const { signal } = options;
  while (!signal?.aborted) {
    let busy = false;
    try {
      const swept = await work.sweep(options.sweep);
      const reaped = await work.reap(options.reap);
      // A full batch that made progress: more may be waiting. A batch of skips is not progress.
      busy = swept.examined >= limit && swept.skipped < swept.examined;
      options.onPass?.({ swept, reaped });
    } catch (error) {
      try {
        options.onError?.(error);
      } catch {
        // An error handler that throws must not stop recovery either.
      }
    }
    if (busy || signal?.aborted) continue;
    await pause(intervalMs * (0.75 + random() * 0.5), signal);
  }
}
