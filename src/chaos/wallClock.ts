/**
 * The process's wall clock as `Date.now()` reads it, steppable: a chaos fault that jumps it
 * forwards or backwards, as NTP stepping a drifted clock or a VM resuming does. chargeonce
 * measures leases and provider budgets on a monotonic clock, so a step must change nothing; the
 * harness steps the wall clock to prove it. Only `Date.now` is moved (`new Date()` is not).
 */
const realNow = Date.now.bind(Date);
let offsetMs = 0;
let installed = false;

/** Moves this process's `Date.now()` by `ms` (negative: back), for the rest of the run. */
export function stepWallClock(ms: number): void {
  if (!installed) {
    Date.now = () => realNow() + offsetMs;
    installed = true;
  }
  offsetMs += ms;
}

/** Puts `Date.now` back as it was. */
export function restoreWallClock(): void {
  if (!installed) return;
  Date.now = realNow;
  installed = false;
  offsetMs = 0;
}
