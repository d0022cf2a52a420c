import type { MonotonicClock } from './types.js';

/** Where the clock reads time: replaced in tests that suspend a host that is not suspended. */
export type ClockSources = { monotonic: () => number; wall: () => number };

const REAL_SOURCES: ClockSources = {
  monotonic: () => performance.now(),
  wall: () => Date.now(),
};

/**
 * How far the wall clock may run ahead of the monotonic one between two readings before the
 * difference is counted as time the monotonic clock missed: more than `Date.now()`'s
 * millisecond steps and the two clocks' jitter, far less than any lease margin.
 */
export const SKEW_TOLERANCE_MS = 5;

/**
 * The widest the two monotonic readings around a wall-clock reading may be apart for the three
 * to be compared: a process preempted (or collecting garbage) between the clocks would otherwise
 * read the wall clock late, and count the pause as a suspend, for good.
 */
const BRACKET_MS = 1;

/**
 * The engine's default clock: monotonic (`performance.now()`), plus the time it did not see.
 *
 * Leases end by PostgreSQL's clock, which runs on while the host is suspended (a VM paused for a
 * snapshot or a live migration, a machine asleep); `performance.now()` stops then (Linux's
 * `CLOCK_MONOTONIC`), so an attempt resumed after its lease ended, and after a sweeper took its
 * key and cancelled it, would find its lease still fresh and call the provider. The wall clock
 * runs on through a suspend: whenever it moved ahead of the monotonic clock between two readings
 * by more than `SKEW_TOLERANCE_MS`, that lead is added. A wall-clock step back adds nothing; a
 * step forward is counted as time passed, which can only make an attempt renew its lease, or
 * give up, sooner, never later (a step back that is later put right counts once, forward). The
 * reading never goes back, and never runs slower than `performance.now()`.
 *
 * What it cannot see: a suspend the wall clock does not show on resume (a paused VM whose clock
 * is put right later, slewed by NTP). Such a pause is covered only as any pause of the process
 * is (see the README's Guarantee 2).
 */
export function hostClock(sources: ClockSources = REAL_SOURCES): MonotonicClock {
  let missed = 0;
  let lastSkew = sources.wall() - sources.monotonic();
  return {
    now() {
      const before = sources.monotonic();
      const wall = sources.wall();
      const after = sources.monotonic();
      if (after - before <= BRACKET_MS) {
        const skew = wall - before;
        if (skew - lastSkew > SKEW_TOLERANCE_MS) missed += skew - lastSkew;
        lastSkew = skew;
      }
      return after + missed;
    },
  };
}
