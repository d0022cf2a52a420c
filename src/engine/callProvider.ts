import { ProviderTransientError } from '../provider/PaymentProvider.js';

/**
 * Runs one provider call under a deadline. The adapter gets an AbortSignal; if it ignores it, the
 * deadline still wins the race, so an attempt never outlives its lease waiting on the provider.
 */
export async function callProvider<T>(
  call: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
): Promise<T> {
  if (timeoutMs <= 0) throw new ProviderTransientError('timeout');
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new ProviderTransientError('timeout');
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([call(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
