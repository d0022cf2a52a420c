import { describe, expect, it } from 'vitest';
import { createCrashInjector } from '../../src/chaos/createCrashInjector.js';
import { resolveChaosOptions } from '../../src/chaos/resolveChaosOptions.js';
import { InvalidConfigurationError } from '../../src/errors.js';

const rates = { crashRate: 0, stallRate: 0, leaseMs: 1_000, providerTimeoutMs: 400 };

/** A source of "random" numbers that counts its draws. */
function draws(value: number) {
  let count = 0;
  return {
    random: () => {
      count += 1;
      return value;
    },
    count: () => count,
  };
}

describe('the held-claim fault of the chaos harness', () => {
  it('holds a claim it draws, and makes it claim jointly so that the key stays uncommitted', () => {
    const source = draws(0);
    const drawn = createCrashInjector(source.random, { ...rates, holdRate: 0.5 });
    expect(drawn.hold).toBe(true);
    // A separate claim commits the key on its own, before any hook runs: nothing to hold.
    expect(drawn.separateClaim).toBe(false);
  });

  it('draws one more number per attempt when it is on, and none when it is off (0)', () => {
    const off = draws(0.9);
    const on = draws(0.9);
    expect(createCrashInjector(off.random, { ...rates, holdRate: 0 }).hold).toBe(false);
    expect(createCrashInjector(on.random, { ...rates, holdRate: 0.5 }).hold).toBe(false);
    expect(on.count()).toBe(off.count() + 1);
  });

  it('is 0.01 unless asked otherwise, and refuses a rate outside [0, 1]', () => {
    expect(resolveChaosOptions({ databaseUrl: 'postgres://x' }).holdRate).toBe(0.01);
    expect(() => resolveChaosOptions({ databaseUrl: 'postgres://x', holdRate: 1.5 })).toThrow(
      InvalidConfigurationError,
    );
  });
});
