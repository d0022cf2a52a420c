import { describe, expect, it } from 'vitest';
import { chaosHostClock, suspendHost, SUSPENDABLE } from '../../src/chaos/hostSuspend.js';

describe('the chaos fault of a suspended host', () => {
  it('blocks the process and hides the time from the monotonic clock; the engine clock counts it', () => {
    const clock = chaosHostClock();
    const before = clock.now();
    const monotonicBefore = SUSPENDABLE.monotonic();
    const wallBefore = Date.now();
    suspendHost(200);
    // The whole process was blocked: the wall clock ran on, the monotonic clock did not.
    expect(Date.now() - wallBefore).toBeGreaterThanOrEqual(199);
    expect(SUSPENDABLE.monotonic() - monotonicBefore).toBeLessThan(50);
    // The engine's clock counted the time from the wall clock's lead.
    expect(clock.now() - before).toBeGreaterThanOrEqual(195);
  });
});
