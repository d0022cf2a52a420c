import { ChargeOnceError } from '../errors.js';

/**
 * A refusal of the HTTP edge itself, before the engine is asked anything: wrong method, no
 * credentials, an unreadable or oversized body. Nothing is written, so the key stays unused.
 */
export class HttpEdgeError extends ChargeOnceError {
  /** Headers the answer must carry (`Allow`, `WWW-Authenticate`, …). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: string,
    httpStatus: number,
    message: string,
    headers: Record<string, string> = {},
  ) {
    super(code, httpStatus, message);
    this.headers = headers;
  }
}
