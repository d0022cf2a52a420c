import type { HttpAnswer } from './errorResponse.js';

// Not Buffer: the Fetch handler may run where only web APIs are global.
const utf8 = new TextEncoder();

/** Statuses that carry no body (RFC 9110 §15.3.5, §15.3.6, §15.4.5); a stored one may be replayed. */
const BODYLESS_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/** False for a status whose answer has no body: the body text is then not sent. */
export function hasBody(answer: HttpAnswer): boolean {
  return !BODYLESS_STATUSES.has(answer.status);
}

/**
 * Every header of an answer, the same whichever adapter writes it: JSON (or the problem type
 * the answer names) that no cache keeps, its exact length, and the answer's own headers.
 */
export function answerHeaders(answer: HttpAnswer): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    ...(hasBody(answer) ? { 'Content-Length': String(utf8.encode(answer.body).byteLength) } : {}),
    // A payment answer belongs to one client and one moment; no shared cache may keep it.
    'Cache-Control': 'no-store',
    ...answer.headers,
  };
}
