import { setTimeout as sleep } from 'node:timers/promises';
import { CRASH_POINTS, type CrashPoint, type FaultInjector } from '../engine/types.js';
import { CHARGE_ROW_WAIT_MS } from '../store/movementStatements.js';
import { suspendHost } from './hostSuspend.js';

/** How one attempt is set up to fail, if at all. */
export type AttemptFaults = {
  /** Set when the attempt is to die or stall; unset for a healthy attempt. */
  faults: FaultInjector | undefined;
  point: CrashPoint | null;
  /** Where the attempt stalls past its lease, if it does. */
  stall: StallPoint | null;
  /**
   * Whether its stall suspended its whole process, the monotonic clock stopped (`suspendHost`),
   * so far: one stall in four is to, once no provider call of the process is in flight.
   */
  suspended(): boolean;
  separateClaim: boolean;
  /**
   * The attempt's claim is held uncommitted (a slow `reserve` hook) while a second submission of
   * its request is sent; such an attempt claims jointly, so that its key is uncommitted meanwhile.
   */
  hold: boolean;
  /**
   * How long a held claim is held at least (0 when not held): up to `HOLD_LONGEST_MS`, so that
   * movements queued on a held refund's charge row sometimes wait past `CHARGE_ROW_WAIT_MS`.
   */
  holdMs: number;
};

/** The longest a held claim is held at least: past a movement's wait on its charge's row. */
export const HOLD_LONGEST_MS = 1.5 * CHARGE_ROW_WAIT_MS;

/**
 * Where an attempt can stall: a claim whose COMMIT is acknowledged late, a pause before the
 * provider call, a completion held up after it.
 */
export const STALL_POINTS = [
  'afterClaimCommit',
  'beforeProviderCall',
  'afterProviderCall',
] as const;
export type StallPoint = (typeof STALL_POINTS)[number];

/** How the attempts of a chaos client fail. */
export type FaultRates = {
  crashRate: number;
  /** The chance an attempt stalls at one of `STALL_POINTS` for longer than its lease. */
  stallRate: number;
  /** The chance an attempt's claim is held uncommitted while its request is sent again. */
  holdRate: number;
  leaseMs: number;
  providerTimeoutMs: number;
};

/** One stall in this many is a suspended host rather than a stalled attempt. */
const SUSPEND_ONE_IN = 4;

/** Share of attempts that claim on their own commit: only they can crash at `started`. */
const SEPARATE_CLAIM_SHARE = 0.25;

/**
 * Draws an attempt's faults: with `crashRate`, one crash point picked at random, which fires the
 * first time the attempt reaches it (a point the attempt never reaches, such as
 * `afterClaimCommit` on a retry, leaves it healthy); with `stallRate`, one stall point where the
 * attempt waits, once, from a lease less the provider budget up to a lease and a half.
 */
export function createCrashInjector(random: () => number, rates: FaultRates): AttemptFaults {
  // Drawn only when asked for, so that runs without it draw as they did.
  const hold = rates.holdRate > 0 && random() < rates.holdRate;
  const holdMs = hold ? Math.floor(random() * HOLD_LONGEST_MS) : 0;
  const separateClaim = random() < SEPARATE_CLAIM_SHARE && !hold;
  const point = random() < rates.crashRate ? pickFrom(CRASH_POINTS, random) : null;
  const stall = random() < rates.stallRate ? pickFrom(STALL_POINTS, random) : null;
  // From a lease less the provider budget (the lease may run out mid-call, were it not
  // renewed) to a lease and a half (it is surely over).
  const shortest = Math.max(0, rates.leaseMs - rates.providerTimeoutMs);
  const stallMs = shortest + Math.floor(random() * (1.5 * rates.leaseMs - shortest));
  // One stall in four suspends the host instead: read from the draw above, so that a seed's
  // draws stay what they were.
  const suspend = stall !== null && stallMs % SUSPEND_ONE_IN === 0;
  let suspendedHost = false;
  const suspended = () => suspendedHost;
  if (point === null && stall === null) {
    return { faults: undefined, point, stall, suspended, separateClaim, hold, holdMs };
  }
  let crashed = false;
  let stalled = false;
  return {
    point,
    stall,
    suspended,
    separateClaim,
    hold,
    holdMs,
    faults: {
      shouldCrash: (at) => {
        if (crashed || at !== point) return false;
        crashed = true;
        return true;
      },
      stall: (at) => {
        if (stalled || at !== stall) return undefined;
        stalled = true;
        if (!suspend) return sleep(stallMs);
        return suspendWhenIdle(stallMs).then((done) => {
          suspendedHost = done;
        });
      },
    },
  };
}

/**
 * Stalls for `ms`: waits until none of the process's provider calls is in flight (see
 * `suspendHost`), then suspends the process for what is left. False when no moment was free.
 */
async function suspendWhenIdle(ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    const left = until - performance.now();
    if (left <= 0) return false;
    if (suspendHost(left)) return true;
    await sleep(Math.min(IDLE_POLL_MS, left));
  }
}

/** How often a suspend looks for a moment with no provider call in flight. */
const IDLE_POLL_MS = 2;

function pickFrom<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)] as T;
}
