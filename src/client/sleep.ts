import { pause } from '../pause.js';

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) throw reasonOf(signal);
  await pause(ms, signal);
  if (signal?.aborted) throw reasonOf(signal);
}

/** The signal's reason (an `AbortError` DOMException unless the aborter gave one). */
function reasonOf(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error(String(reason));
}
