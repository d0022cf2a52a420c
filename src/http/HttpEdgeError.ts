import { ChargeOnceError } from '../errors.js';
import { nameErrorKind } from '../errorKinds.js';

/** What the HTTP edge refuses by itself (each one is in `CHARGE_ONCE_ERROR_CODES`). */
export type HttpEdgeErrorCode =
  | 'method_not_allowed'
  | 'unauthenticated'
  | 'unsupported_media_type'
  | 'payload_too_large'
  | 'not_found'
  | 'not_implemented';

/**
 * A refusal of the HTTP edge itself, before the engine is asked anything: an unknown path, a
 * route the engine cannot serve, wrong method, no credentials, an unreadable or oversized body.
 * Nothing is written, so the key stays unused.
 */
export class HttpEdgeError extends ChargeOnceError {
  declare readonly code: HttpEdgeErrorCode;
  /** Headers the answer must carry (`Allow`, `WWW-Authenticate`, …). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: HttpEdgeErrorCode,
    httpStatus: number,
    message: string,
    headers: Record<string, string> = {},
    options?: { cause?: unknown },
  ) {
    super(code, httpStatus, message, options);
    this.headers = headers;
  }
}

nameErrorKind(HttpEdgeError, 'HttpEdgeError');
