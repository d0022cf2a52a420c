import { describe, expect, it } from 'vitest';
import {
  chaosHostClock,
  countingProviderCalls,
  suspendHost,
  SUSPENDABLE,
} from '../../src/chaos/hostSuspend.js';
import { createFakeProvider } from '../../src/testing/index.js';

describe('the chaos fault of a suspended host', () => {
  it('blocks the process and hides the time from the monotonic clock; the engine clock counts it', () => {
    const clock = chaosHostClock();
    const before = clock.now();
    const monotonicBefore = SUSPENDABLE.monotonic();
    const wallBefore = Date.now();
    expect(suspendHost(200)).toBe(true);
    // The whole process was blocked: the wall clock ran on, the monotonic clock did not.
    expect(Date.now() - wallBefore).toBeGreaterThanOrEqual(199);
    expect(SUSPENDABLE.monotonic() - monotonicBefore).toBeLessThan(50);
    // The engine's clock counted the time from the wall clock's lead.
    expect(clock.now() - before).toBeGreaterThanOrEqual(195);
  });

  it('does nothing while a provider call of the process is in flight', async () => {
    const provider = countingProviderCalls(createFakeProvider());
    const input = {
      merchantId: 'm_1',
      providerKey: 'pk_suspend',
      customerId: 'c_1',
      amountMinor: 500,
      currency: 'EUR',
    };
    const wallBefore = Date.now();
    const charging = provider.createCharge(input as never, {
      signal: new AbortController().signal,
    });
    expect(suspendHost(1_000)).toBe(false);
    // Not blocked: far less than the second asked for went by.
    expect(Date.now() - wallBefore).toBeLessThan(500);
    await charging;
    // Once it settled, a suspend goes ahead.
    expect(suspendHost(10)).toBe(true);
  });
});
