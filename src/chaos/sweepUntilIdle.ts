import type { ChargeEngine } from '../engine/createChargeEngine.js';
import { addSweepResult, emptySweepResult, type SweepResult } from '../recovery/sweep.js';

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
  return { ...emptySweepResult(), passes: 0 };
}

/** Adds a pass's (or another sweep's) counts into `total`. */
export function addSweep(total: SweepTotals, more: SweepResult & { passes?: number }): void {
  const { passes = 0, ...counts } = more;
  total.passes += passes;
  addSweepResult(total, counts);
}
