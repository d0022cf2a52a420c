import { hostClock, type ClockSources } from '../engine/hostClock.js';
import type { MonotonicClock } from '../engine/types.js';
import { declaredTraits, type PaymentProvider } from '../provider/PaymentProvider.js';

/*
 * A suspended host, as a chaos fault. While a host is suspended (a VM paused for a snapshot or a
 * live migration), nothing in it runs and its monotonic clock stops; PostgreSQL's clock, which
 * ends leases, runs on. A fault blocks this process whole (no JavaScript of it runs: every
 * attempt in it is suspended together) and hides that time from the monotonic clock the chaos
 * engines read; the wall clock shows it, as a real host's does on resume.
 *
 * Only while none of the process's provider calls is in flight. A suspend that caught an
 * attempt between its last look at its lease and its request leaving the process would send
 * the request after the lease ended, which no check in the process can see: the README's
 * Guarantee 2 covers such a pause for `leaseMarginMs` plus `sweepGraceMs` only. Everywhere else,
 * an engine must see a suspend of any length.
 */

let hiddenMs = 0;
let providerCallsInFlight = 0;

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
 * Suspends this process for `ms`: blocks it, and hides the time from the monotonic clock. False
 * (nothing done) while a provider call of the process is in flight (see above). An engine that
 * reads its clock after this must count the time (from the wall clock's lead), or it would call
 * a provider under a lease that ended while it was suspended.
 */
export function suspendHost(ms: number): boolean {
  if (providerCallsInFlight > 0) return false;
  const from = performance.now();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  hiddenMs += performance.now() - from;
  return true;
}

/** `provider`, its calls counted while in flight, for `suspendHost`. Every engine here uses one. */
export function countingProviderCalls(provider: PaymentProvider): PaymentProvider {
  const counted: PaymentProvider = {
    ...declaredTraits(provider),
    createCharge: (input, opts) => inFlight(() => provider.createCharge(input, opts)),
    findCharge: (providerKey, opts) => inFlight(() => provider.findCharge(providerKey, opts)),
  };
  const { createRefund, findRefund, capture, findCapture } = methodsOf(provider);
  if (createRefund && findRefund) {
    counted.createRefund = (input, opts) => inFlight(() => createRefund(input, opts));
    counted.findRefund = (providerKey, opts) => inFlight(() => findRefund(providerKey, opts));
  }
  if (capture && findCapture) {
    counted.capture = (input, opts) => inFlight(() => capture(input, opts));
    counted.findCapture = (input, opts) => inFlight(() => findCapture(input, opts));
  }
  return counted;
}

/** The optional methods, bound to their provider. */
function methodsOf(provider: PaymentProvider) {
  const bound = <K extends 'createRefund' | 'findRefund' | 'capture' | 'findCapture'>(name: K) => {
    const method = provider[name];
    return typeof method === 'function'
      ? (method.bind(provider) as NonNullable<PaymentProvider[K]>)
      : undefined;
  };
  return {
    createRefund: bound('createRefund'),
    findRefund: bound('findRefund'),
    capture: bound('capture'),
    findCapture: bound('findCapture'),
  };
}

/** Runs one provider call, counted in flight until it settles. */
function inFlight<T>(call: () => Promise<T>): Promise<T> {
  providerCallsInFlight += 1;
  let settling: Promise<T>;
  try {
    settling = Promise.resolve(call());
  } catch (error) {
    providerCallsInFlight -= 1;
    throw error;
  }
  return settling.finally(() => {
    providerCallsInFlight -= 1;
  });
}
