import { describe, expect, it } from 'vitest';
import { createAttemptRouter } from '../../src/chaos/createAttemptRouter.js';
import type { ChargeOnceEvent } from '../../src/observability/events.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { deriveProviderKey } from '../../src/request.js';

const signal = new AbortController().signal;
const scoped = (key: string) => ({ merchantId: 'm_1', operation: 'charge', key });
const claimed = (key: string, chargeId: string): ChargeOnceEvent => ({
  type: 'claimed',
  ...scoped(key),
  chargeId,
  from: 'new',
  attempt: 1,
});

// The router is what lets one engine serve many chaos attempts at once: each must get its own
// faults, lookups and events, and none of another's.
describe('the attempt router of a shared engine', () => {
  it('gives each key its own attempt’s crash and stall points, once, and nothing after', async () => {
    const router = createAttemptRouter(createFakeProvider());
    let crashes = 0;
    const crashOnce = {
      shouldCrash: (point: string) => point === 'afterProviderCall' && crashes++ === 0,
    };
    const stalled = Promise.resolve();

    await router.run(scoped('a'), { faults: crashOnce }, async () => {
      await router.run(
        scoped('b'),
        { faults: { shouldCrash: () => false, stall: () => stalled } },
        () => {
          expect(router.faults.shouldCrash('afterProviderCall', scoped('b'))).toBe(false);
          expect(router.faults.stall?.('beforeProviderCall', scoped('a'))).toBeUndefined();
          expect(router.faults.stall?.('beforeProviderCall', scoped('b'))).toBe(stalled);
          expect(router.faults.shouldCrash('afterProviderCall', scoped('a'))).toBe(true);
          expect(router.faults.shouldCrash('afterProviderCall', scoped('a'))).toBe(false);
          return Promise.resolve();
        },
      );
    });
    // The attempts are over: a key nobody runs is healthy.
    crashes = 0;
    expect(router.faults.shouldCrash('afterProviderCall', scoped('a'))).toBe(false);
  });

  it('tells an attempt what a lookup under its provider key found, learned from its claim', async () => {
    const provider = createFakeProvider();
    const router = createAttemptRouter(provider);
    const chargeId = '0b6f3c1e-6a4b-4c1e-9a53-2f7d1d0e8b11';
    const providerKey = deriveProviderKey('m_1', 'charge', 'a', chargeId);
    const made = await provider.createCharge(
      {
        providerKey,
        merchantId: 'm_1',
        chargeId,
        customerId: 'c_1',
        amountMinor: 500,
        currency: 'NGN',
      },
      { signal },
    );
    const foundByA: string[] = [];
    const foundByB: string[] = [];
    const eventsOfB: string[] = [];

    await router.run(scoped('a'), { found: (c) => foundByA.push(c.id) }, async () => {
      await router.run(
        scoped('b'),
        { found: (c) => foundByB.push(c.id), event: (e) => eventsOfB.push(e.type) },
        async () => {
          router.onEvent(claimed('a', chargeId));
          router.onEvent({ type: 'conflict', ...scoped('b'), retryAfterMs: 10 });
          await router.provider.findCharge(providerKey, { signal, reservedAt: new Date() });
        },
      );
    });

    expect(foundByA).toEqual([made.id]);
    expect(foundByB).toEqual([]);
    expect(eventsOfB).toEqual(['conflict']);
  });

  it('wakes only the attempts of the key a completion notified', async () => {
    const router = createAttemptRouter(createFakeProvider());
    const woken: string[] = [];
    await router.run(scoped('a'), { notified: () => woken.push('a') }, async () => {
      await router.run(scoped('b'), { notified: () => woken.push('b') }, () => {
        router.notified(scoped('b'));
        router.notified({ merchantId: 'm_2', key: 'a' });
        return Promise.resolve();
      });
    });
    expect(woken).toEqual(['b']);
  });
});
