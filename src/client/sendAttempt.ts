import type { ChargeClientResponse } from './ChargeClientError.js';

/** How one attempt ended. */
export type AttemptResult =
  | { kind: 'response'; response: ChargeClientResponse }
  | { kind: 'timeout'; cause: unknown }
  | { kind: 'network'; cause: unknown }
  | { kind: 'aborted'; cause: unknown };

/**
 * Sends one attempt and reads its whole body, both under `timeoutMs`. A response is whatever
 * came back whole; anything that broke on the way (reset, refused, a body cut short) is a
 * network failure, since it may not happen next time.
 */
export async function sendAttempt(attempt: {
  fetch: typeof globalThis.fetch;
  url: URL;
  headers: Headers;
  body: string;
  timeoutMs: number;
  signal: AbortSignal | undefined;
}): Promise<AttemptResult> {
  const { signal } = attempt;
  if (signal?.aborted) return { kind: 'aborted', cause: signal.reason };
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException('The attempt timed out.', 'TimeoutError'));
  }, attempt.timeoutMs);
  try {
    const response = await attempt.fetch(attempt.url, {
      method: 'POST',
      headers: attempt.headers,
      body: attempt.body,
      signal: controller.signal,
      // A redirected POST may come back as a GET; a redirect is an answer, not a detour.
      redirect: 'manual',
    });
    const body = await response.text();
    return {
      kind: 'response',
      response: { status: response.status, headers: response.headers, body },
    };
  } catch (error) {
    if (signal?.aborted) return { kind: 'aborted', cause: signal.reason };
    return timedOut ? { kind: 'timeout', cause: error } : { kind: 'network', cause: error };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}
