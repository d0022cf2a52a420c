import { afterEach, describe, expect, it, vi } from 'vitest';
import { callProvider } from '../../src/engine/callProvider.js';
import { ProviderTransientError } from '../../src/provider/PaymentProvider.js';

// The provider call's deadline, without a provider: what the call gets, and what wins the race.
// The clock is Vitest's, so nothing here depends on how fast the machine is.

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/** Counts the AbortControllers made while `work` runs. */
async function controllersMadeBy(work: () => Promise<unknown>): Promise<number> {
  let made = 0;
  vi.stubGlobal(
    'AbortController',
    class extends AbortController {
      constructor() {
        super();
        made += 1;
      }
    },
  );
  await work();
  return made;
}

describe('callProvider', () => {
  it('answers with what the call answers, and leaves no timer behind', async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const answer = callProvider((options) => {
      signal = options.signal;
      return Promise.resolve('charged');
    }, 1_000);
    await expect(answer).resolves.toBe('charged');
    expect(vi.getTimerCount()).toBe(0);
    expect(signal?.aborted).toBe(false);
  });

  it('rejects with a transient timeout at the deadline, and aborts the call', async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    const answer = callProvider((options) => {
      signal = options.signal;
      return new Promise<never>(() => {});
    }, 1_000.7);
    const settled = answer.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(999);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await settled;
    expect(error).toBeInstanceOf(ProviderTransientError);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
  });

  it('ignores an answer that comes after the deadline', async () => {
    vi.useFakeTimers();
    let late: (value: string) => void = () => {};
    const answer = callProvider(() => new Promise<string>((resolve) => (late = resolve)), 10);
    const settled = answer.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(10);
    late('charged');
    expect(await settled).toBeInstanceOf(ProviderTransientError);
  });

  it('rejects at once when no time is left, without calling', async () => {
    const call = vi.fn(() => Promise.resolve('charged'));
    await expect(callProvider(call, 0)).rejects.toBeInstanceOf(ProviderTransientError);
    expect(call).not.toHaveBeenCalled();
  });

  it('passes on a rejection, a throw and a bare value as an async adapter would give them', async () => {
    const refused = new Error('refused');
    await expect(callProvider(() => Promise.reject(refused), 1_000)).rejects.toBe(refused);
    await expect(
      callProvider(() => {
        throw refused;
      }, 1_000),
    ).rejects.toBe(refused);
    // A plain JavaScript adapter may answer without a promise.
    await expect(callProvider(() => 'charged' as unknown as Promise<string>, 1_000)).resolves.toBe(
      'charged',
    );
  });

  it('makes no AbortController for an adapter that never reads the signal, one for one that does', async () => {
    const unread = await controllersMadeBy(() => callProvider(() => Promise.resolve('x'), 1_000));
    expect(unread).toBe(0);
    const read = await controllersMadeBy(() =>
      callProvider((options) => {
        // Read twice: still one controller.
        expect(options.signal).toBe(options.signal);
        return Promise.resolve('x');
      }, 1_000),
    );
    expect(read).toBe(1);
  });

  it('gives an adapter that reads the signal only after the deadline one already aborted', async () => {
    vi.useFakeTimers();
    let options: { readonly signal: AbortSignal } | undefined;
    const answer = callProvider((o) => {
      options = o;
      return new Promise<never>(() => {});
    }, 10);
    const settled = answer.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(10);
    const error = await settled;
    expect(error).toBeInstanceOf(ProviderTransientError);
    expect(options?.signal.aborted).toBe(true);
    expect(options?.signal.reason).toBe(error);
  });
});
