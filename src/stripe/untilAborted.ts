import { ProviderTransientError } from '../provider/PaymentProvider.js';

/**
 * Waits for `promise` until `signal` aborts, then gives up with a transient `timeout`. The SDK
 * cannot cancel a request; its own `timeout` tears the connection down later.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(new ProviderTransientError('timeout', { cause: signal.reason }));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      reject(new ProviderTransientError('timeout', { cause: signal.reason }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: Error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
