/**
 * What may differ next time: a request timeout (408), a key held by another attempt (409), rate
 * limiting (429), and a gateway or backend that is down or slow (502, 503, 504). Everything
 * else is the answer, and retrying would only repeat it.
 */
const RETRYABLE_STATUSES = new Set([408, 409, 429, 502, 503, 504]);

/** True when a response with this status may be followed by a different one. */
export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/** True for an answer the operation ends with: charged (2xx) or declined (402). */
export function isChargeOutcome(status: number): boolean {
  return (status >= 200 && status < 300) || status === 402;
}

/**
 * Exponential backoff with full jitter (a uniform draw in `[0, cap)`): clients that failed
 * together do not come back together.
 *
 * @param retry 0 for the first retry, 1 for the second, …
 * @param random a draw in `[0, 1)`
 */
export function backoffDelay(
  retry: number,
  options: { baseDelayMs: number; maxDelayMs: number; random: () => number },
): number {
  const cap = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** retry);
  const draw = Math.min(Math.max(options.random(), 0), 1);
  return Math.floor(draw * cap);
}

/**
 * `Retry-After` in milliseconds: delay-seconds, or an HTTP date counted from `now`. `undefined`
 * when absent or unreadable, so the backoff alone decides.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  // The three HTTP-date forms all start with a day name; Date.parse alone reads "-1" as a year.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
