import { describe, expect, it } from 'vitest';
import { hostClock, SKEW_TOLERANCE_MS } from '../../src/engine/hostClock.js';

/** Two clocks the test moves: the monotonic one, and the wall clock in whole milliseconds. */
function aHost() {
  let monotonic = 1_000.25;
  let wall = 1_700_000_000_000;
  return {
    sources: { monotonic: () => monotonic, wall: () => Math.floor(wall) },
    /** Time passes, seen by both clocks. */
    pass(ms: number) {
      monotonic += ms;
      wall += ms;
    },
    /** The host is suspended: only the wall clock runs. */
    suspend(ms: number) {
      wall += ms;
    },
    /** The wall clock is stepped (NTP, a person). */
    step(ms: number) {
      wall += ms;
    },
  };
}

describe('hostClock', () => {
  it('runs as the monotonic clock while nothing is suspended, however often it is read', () => {
    const host = aHost();
    const clock = hostClock(host.sources);
    const start = clock.now();
    // Read every 0.3 ms: the wall clock's millisecond steps must not add up to drift.
    for (let i = 0; i < 100_000; i++) {
      host.pass(0.3);
      clock.now();
    }
    expect(clock.now() - start).toBeCloseTo(30_000, 6);
  });

  it('counts a suspend in full', () => {
    const host = aHost();
    const clock = hostClock(host.sources);
    const before = clock.now();
    host.pass(10);
    host.suspend(60_000);
    host.pass(10);
    expect(clock.now() - before).toBeGreaterThanOrEqual(60_020 - 1);
  });

  it('ignores a step back, and still counts a later suspend', () => {
    const host = aHost();
    const clock = hostClock(host.sources);
    const before = clock.now();
    host.step(-3_600_000);
    host.pass(100);
    const afterStep = clock.now();
    expect(afterStep - before).toBeCloseTo(100, 6);
    host.suspend(45_000);
    expect(clock.now() - afterStep).toBeGreaterThanOrEqual(45_000 - 1);
  });

  it('counts a step forward as time passed (a lease only looks shorter)', () => {
    const host = aHost();
    const clock = hostClock(host.sources);
    const before = clock.now();
    host.step(60_000);
    expect(clock.now() - before).toBeGreaterThanOrEqual(60_000 - 1);
  });

  it('does not count a pause between its readings of the two clocks as a suspend', () => {
    const host = aHost();
    // Preempted (or collecting garbage) for 30 ms between reading one clock and the other.
    const sources = {
      monotonic: host.sources.monotonic,
      wall: () => {
        host.pass(30);
        return host.sources.wall();
      },
    };
    const clock = hostClock(sources);
    const start = clock.now();
    for (let i = 0; i < 50; i++) clock.now();
    // Every pause was real time, seen by the monotonic clock too: nothing more is counted.
    expect(clock.now() - start).toBeCloseTo(51 * 30, 6);
  });

  it('leaves out a lead within the tolerance, and never goes back', () => {
    const host = aHost();
    const clock = hostClock(host.sources);
    const before = clock.now();
    host.suspend(SKEW_TOLERANCE_MS - 1);
    const small = clock.now();
    expect(small - before).toBe(0);
    host.step(-5_000);
    expect(clock.now()).toBeGreaterThanOrEqual(small);
  });
});
