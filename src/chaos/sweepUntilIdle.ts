import type { ChargeEngine } from '../engine/createChargeEngine.js';
import type { SweepResult } from '../recovery/sweep.js';

/** A sweep's counts over all its passes. */
export type SweepTotals = SweepResult & { passes: number };

/** Keys taken per pass. */
const PASS_LIMIT = 100;
/**
 * Passes before giving up. A pass whose provider calls failed releases its keys for the next
 * one, so faults only cost passes; an adapter that always fails would loop for ever, and its
 * keys are better reported unfinished.
 */
const MAX_PASSES = 200;

/** Sweeps until a pass finds nothing left to do. */
export async function sweepUntilIdle(engine: ChargeEngine): Promise<SweepTotals> {
  const total = emptySweep();
  while (total.passes < MAX_PASSES) {
    const pass = await engine.sweep({ limit: PASS_LIMIT });
    total.passes += 1;
    addSweep(total, pass);
    if (pass.examined === 0) break;
  }
  return total;
}

export function emptySweep(): SweepTotals {
  return {
    passes: 0,
    examined: 0,
    adopted: 0,
    cancelled: 0,
    resumed: 0,
    released: 0,
    failed: 0,
    skipped: 0,
  };
}

/** Adds a pass's (or another sweep's) counts into `total`. */
export function addSweep(total: SweepTotals, more: SweepResult & { passes?: number }): void {
  total.passes += more.passes ?? 0;
  total.examined += more.examined;
  total.adopted += more.adopted;
  total.cancelled += more.cancelled;
  total.resumed += more.resumed;
  total.released += more.released;
  total.failed += more.failed;
  total.skipped += more.skipped;
}
