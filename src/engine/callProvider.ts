import { ProviderTransientError, type ProviderCallOptions } from '../provider/PaymentProvider.js';

/**
 * Runs one provider call under a deadline. The adapter gets an AbortSignal (`options.signal`); if
 * it ignores it, the deadline still settles the call, so an attempt never outlives its lease
 * waiting on the provider.
 *
 * One promise settled by whichever comes first, the answer or the timer, rather than a race of
 * the call against a deadline promise: a charge makes this call on its hot path, and a race costs
 * it four more promises (each one a promise hook's work when an OpenTelemetry context manager is
 * on). For the same reason the AbortController is made only when the adapter reads the signal.
 */
export function callProvider<T>(
  call: (options: ProviderCallOptions) => Promise<T>,
  timeoutMs: number,
): Promise<T> {
  if (timeoutMs <= 0) return Promise.reject(new ProviderTransientError('timeout'));
  let controller: AbortController | undefined;
  let timedOut: ProviderTransientError | undefined;
  const options: ProviderCallOptions = {
    get signal() {
      if (!controller) {
        controller = new AbortController();
        // Read after the deadline: the call is already over for chargeonce.
        if (timedOut) controller.abort(timedOut);
      }
      return controller.signal;
    },
  };
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      timedOut = new ProviderTransientError('timeout');
      controller?.abort(timedOut);
      reject(timedOut);
    }, timeoutMs);
    const answered = (value: T): void => {
      clearTimeout(timer);
      resolve(value);
    };
    const failed = (error: unknown): void => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the adapter's, as thrown
      reject(error);
    };
    try {
      // A plain JavaScript adapter may answer with a bare value; for a native promise this is
      // the promise itself, not a new one.
      Promise.resolve(call(options)).then(answered, failed);
    } catch (error) {
      // An adapter that throws before it returns a promise fails the call the same way.
      failed(error);
    }
  });
}
