import { CRASH_POINTS, type CrashPoint, type FaultInjector } from '../engine/types.js';

/** How one attempt is set up to fail, if at all. */
export type AttemptFaults = {
  /** Set when the attempt is to die at `point`; unset for a healthy attempt. */
  faults: FaultInjector | undefined;
  point: CrashPoint | null;
  separateClaim: boolean;
};

/** Share of attempts that claim on their own commit: only they can crash at `started`. */
const SEPARATE_CLAIM_SHARE = 0.25;

/**
 * Draws an attempt's faults: with `crashRate`, one crash point picked at random, which fires the
 * first time the attempt reaches it (a point the attempt never reaches, such as
 * `afterClaimCommit` on a retry, leaves it healthy).
 */
export function createCrashInjector(random: () => number, crashRate: number): AttemptFaults {
  const separateClaim = random() < SEPARATE_CLAIM_SHARE;
  if (!(random() < crashRate)) return { faults: undefined, point: null, separateClaim };
  const point = CRASH_POINTS[Math.floor(random() * CRASH_POINTS.length)] ?? 'afterClaimCommit';
  let fired = false;
  return {
    point,
    separateClaim,
    faults: {
      shouldCrash: (at) => {
        if (fired || at !== point) return false;
        fired = true;
        return true;
      },
    },
  };
}
