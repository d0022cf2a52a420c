import { STATUS_CODES } from 'node:http';
import {
  ChargeOnceError,
  IdempotencyKeyReusedError,
  InvalidRequestError,
  type ChargeOnceErrorCode,
  type FieldIssue,
} from '../errors.js';
import { MAX_REPORTED_ISSUES } from '../request.js';
import { HttpEdgeError } from './HttpEdgeError.js';
import { PROBLEM_JSON, type ErrorFormat } from './negotiateErrorFormat.js';

/** An answer to write: status, headers and the exact body text. */
export type HttpAnswer = {
  status: number;
  headers: Record<string, string>;
  body: string;
};

/** How to write an error: which format the client asked for, and where problem types live. */
export type ErrorStyle = { format: ErrorFormat; problemTypeBase: string | undefined };

const DEFAULT_STYLE: ErrorStyle = { format: 'json', problemTypeBase: undefined };

/** Statuses whose answer tells the client when to come back. */
const RETRY_AFTER_STATUSES = new Set([409, 429, 503]);

/** The wait suggested when an error carries none. */
const DEFAULT_RETRY_AFTER_MS = 1_000;

/**
 * Codes of operator faults (a database from a newer version or never migrated, a bad option, an
 * injected crash): their messages are for the operator's log, not for API clients.
 */
const OPERATOR_FAULTS: ReadonlySet<ChargeOnceErrorCode> = new Set([
  'schema_version',
  'schema_not_migrated',
  'invalid_configuration',
  'simulated_crash',
]);

const INVALID_REQUEST_MESSAGE = 'The request is invalid; "fields" names each problem.';
const REUSED_MESSAGE = 'This idempotency key was already used with a different request.';
const DIFFERS = 'differs from the request first sent with this key';

/**
 * Answered by code, with the message said here: the error's own names what the operator needs
 * (why the provider's answer was refused: its charge id, its amount), not the API client; or it
 * repeats what `fields` already says, which a refusal never does twice.
 */
const PUBLIC_MESSAGES: Partial<Record<ChargeOnceErrorCode, string>> = {
  provider_answer_invalid:
    "The payment provider's answer could not be accepted; the operation was set aside for review.",
  invalid_request: INVALID_REQUEST_MESSAGE,
  idempotency_key_reused: REUSED_MESSAGE,
};

type Refusal = {
  status: number;
  headers: Record<string, string>;
  code: ChargeOnceErrorCode | 'internal_error';
  message: string;
  fields?: FieldIssue[];
};

const INTERNAL: Refusal = {
  status: 500,
  headers: {},
  code: 'internal_error',
  message: 'Internal server error.',
};

/**
 * Maps an error to its answer: a `ChargeOnceError` by its `httpStatus` and `code`, anything
 * else to a bare 500 that shows nothing of the error. `fields` names what to fix: each invalid
 * field of a 400, each field of a 422 that differs from the stored request (by name, never its
 * value), at most `MAX_REPORTED_ISSUES` of them.
 *
 * Written as `{"error":{"code","message","fields"?}}`, or as RFC 9457 problem details
 * (`type`, `title`, `status`, `detail`, and the members `code` and `fields`) in the `problem`
 * format.
 */
export function errorResponse(error: unknown, style: ErrorStyle = DEFAULT_STYLE): HttpAnswer {
  return render(refusalOf(error), style);
}

function refusalOf(error: unknown): Refusal {
  if (!(error instanceof ChargeOnceError) || !isPublic(error)) return INTERNAL;
  const headers: Record<string, string> = {};
  if (error instanceof HttpEdgeError) Object.assign(headers, error.headers);
  if (RETRY_AFTER_STATUSES.has(error.httpStatus)) {
    headers['Retry-After'] = String(retryAfterSeconds(error));
  }
  const fields =
    error instanceof InvalidRequestError
      ? error.issues.map(({ field, message }) => ({ field, message }))
      : error instanceof IdempotencyKeyReusedError && error.differingFields.length > 0
        ? error.differingFields.map((field) => ({ field, message: DIFFERS }))
        : undefined;
  return {
    status: error.httpStatus,
    headers,
    code: error.code,
    message: PUBLIC_MESSAGES[error.code] ?? error.message,
    ...(fields ? { fields: fields.slice(0, MAX_REPORTED_ISSUES) } : {}),
  };
}

function isPublic(error: ChargeOnceError): boolean {
  const status = error.httpStatus;
  return (
    Number.isInteger(status) && status >= 400 && status <= 599 && !OPERATOR_FAULTS.has(error.code)
  );
}

/** `Retry-After` is in whole seconds: rounded up, so a client never comes back too early. */
export function retryAfterSeconds(error: ChargeOnceError): number {
  const ms = (error as { retryAfterMs?: unknown }).retryAfterMs;
  const wait =
    typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_RETRY_AFTER_MS;
  return Math.ceil(wait / 1_000);
}

function render(refusal: Refusal, style: ErrorStyle): HttpAnswer {
  const { status, code, message, fields } = refusal;
  if (style.format === 'json') {
    return {
      status,
      headers: { 'Content-Type': 'application/json', ...refusal.headers },
      body: JSON.stringify({ error: { code, message, ...(fields ? { fields } : {}) } }),
    };
  }
  const typed = style.problemTypeBase !== undefined;
  const problem = {
    type: typed ? `${style.problemTypeBase}${code}` : 'about:blank',
    // With about:blank the title is the status phrase (RFC 9457 §4.2.1); a type of our own
    // has a title of its own.
    title: typed ? PROBLEM_TITLES[code] : (STATUS_CODES[status] ?? PROBLEM_TITLES[code]),
    status,
    detail: message,
    code,
    ...(fields ? { fields } : {}),
  };
  return {
    status,
    headers: { 'Content-Type': PROBLEM_JSON, ...refusal.headers },
    body: JSON.stringify(problem),
  };
}

/** A short, fixed summary of each problem type, as RFC 9457 wants a `title` to be. */
const PROBLEM_TITLES: Record<ChargeOnceErrorCode | 'internal_error', string> = {
  internal_error: 'Internal error',
  invalid_request: 'Invalid request',
  idempotency_key_reused: 'Idempotency key reused with a different request',
  idempotency_key_in_use: 'Idempotency key in use',
  idempotency_key_expired: 'Idempotency key expired',
  provider_unavailable: 'Payment provider unavailable',
  provider_error: 'Payment provider adapter failed',
  provider_answer_invalid: "Payment provider's answer refused",
  charge_needs_attention: 'Charge needs attention',
  store_unavailable: 'Idempotency store unavailable',
  schema_not_migrated: 'Internal error',
  schema_version: 'Internal error',
  invalid_configuration: 'Internal error',
  simulated_crash: 'Internal error',
  charge_rejected: 'Charge rejected',
  method_not_allowed: 'Method not allowed',
  unauthenticated: 'Authentication required',
  unsupported_media_type: 'Unsupported media type',
  payload_too_large: 'Request body too large',
  not_found: 'No such route',
  not_implemented: 'Operation not served',
  charge_refused: 'Charge refused',
  charge_retries_exhausted: 'Charge retries exhausted',
  charge_aborted: 'Charge aborted',
  key_not_resolvable: 'Key not resolvable',
};
