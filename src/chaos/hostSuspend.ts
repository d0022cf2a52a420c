import { hostClock, type ClockSources } from '../engine/hostClock.js';
import type { MonotonicClock } from '../engine/types.js';

/*
 * A suspended host, as a chaos fault. While a host is suspended (a VM paused for a snapshot or a
 * live migration), nothing in it runs and its monotonic clock stops; PostgreSQL's clock, which
 * ends leases, runs on. A fault blocks this process whole (no JavaScript of it runs: every
 * attempt in it is suspended together) and hides that time from the monotonic clock the chaos
 * engines read; the wall clock shows it, as a real host's does on resume.
 */

let hiddenMs = 0;

/** The clocks the chaos engines read: `performance.now()` less the suspends, and `Date.now()`. */
export const SUSPENDABLE: ClockSources = {
  monotonic: () => performance.now() - hiddenMs,
  wall: () => Date.now(),
};

/** An engine's clock over this process's suspendable sources (see `hostClock`). */
export function chaosHostClock(): MonotonicClock {
  return hostClock(SUSPENDABLE);
}

/**
 * Suspends this process for `ms`: blocks it, and hides the time from the monotonic clock. An
 * engine that reads its clock after this must count it (from the wall clock's lead), or it would
 * call a provider under a lease that ended while it was suspended.
 */
export function suspendHost(ms: number): void {
  const from = performance.now();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  hiddenMs += performance.now() - from;
}
