import type { ChargeOnceErrorCode } from '../errors.js';

/**
 * What may differ next time: a request timeout (408), a key held by another attempt (409), rate
 * limiting (429), and a gateway or backend that is down or slow (502, 503, 504). Everything
 * else is the answer, and retrying would only repeat it.
 */
const RETRYABLE_STATUSES = new Set([408, 409, 429, 502, 503, 504]);

/**
 * chargeonce's answers that a retry cannot change, whatever their status: a provider answer that
 * was refused (502; the key is parked for a person) and a key whose stored response expired (410).
 */
const FINAL_ERROR_CODES: ReadonlySet<string> = new Set<ChargeOnceErrorCode>([
  'provider_answer_invalid',
  'idempotency_key_expired',
]);

/** True when a response with this status may be followed by a different one. */
export function isRetryableStatus(status: number): boolean {
  return RETRYABLE_STATUSES.has(status);
}

/**
 * True when a response may be followed by a different one: a retryable status, unless its body
 * is a chargeonce error whose code says a retry would get the same answer.
 */
export function isRetryableResponse(response: { status: number; body: string }): boolean {
  if (!isRetryableStatus(response.status)) return false;
  const code = errorCodeOf(response.body);
  return code === undefined || !FINAL_ERROR_CODES.has(code);
}

/**
 * The code of a chargeonce error body, if it is one: `error.code` of `{"error":{"code":…}}`, or
 * the `code` member of RFC 9457 problem details (what the edge answers a caller who asked for
 * `application/problem+json`).
 */
export function errorCodeOf(body: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const error: unknown = (parsed as { error?: unknown }).error;
  const code: unknown =
    typeof error === 'object' && error !== null
      ? (error as { code?: unknown }).code
      : (parsed as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
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
  const random = options.random();
  // A draw that is not a number (a broken `random`) waits the whole cap rather than none.
  const draw = Number.isNaN(random) ? 1 : Math.min(Math.max(random, 0), 1);
  return Math.floor(draw * cap);
}

/**
 * The longest the client waits between two attempts, `Retry-After` included: 60 s. A server
 * that asks for longer is not retried early (that only earns the same refusal and spends a
 * retry): the operation ends with `charge_retries_exhausted`, whose `key` resumes it later.
 * Bounding every wait also keeps it inside what a timer can hold: 10^9 s would overflow
 * `setTimeout`, which then fires at once.
 */
export const MAX_RETRY_DELAY_MS = 60_000;

/**
 * How long to wait before the next attempt: the backoff, or longer if `Retry-After` asks.
 * `undefined` means give up now: the wait would be longer than {@link MAX_RETRY_DELAY_MS}, or
 * the next attempt would start past `maxElapsedMs` (a retry nobody waits for).
 */
export function nextDelay(wait: {
  backoffMs: number;
  retryAfterMs: number | undefined;
  elapsedMs: number;
  maxElapsedMs: number;
}): number | undefined {
  const delay = Math.max(wait.backoffMs, wait.retryAfterMs ?? 0);
  if (!(delay <= MAX_RETRY_DELAY_MS)) return undefined;
  if (wait.elapsedMs + delay > wait.maxElapsedMs) return undefined;
  return delay;
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
