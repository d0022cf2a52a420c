import {
  ChargeOnceError,
  InvalidRequestError,
  type ChargeOnceErrorCode,
  type FieldIssue,
} from '../errors.js';
import { HttpEdgeError } from './HttpEdgeError.js';

/** An answer to write: status, headers and the exact body text. */
export type HttpAnswer = {
  status: number;
  headers: Record<string, string>;
  body: string;
};

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

/**
 * Answered by code, with the message said here: the error's own names what the operator needs
 * (why the provider's answer was refused: its charge id, its amount), not the API client.
 */
const PUBLIC_MESSAGES: Partial<Record<ChargeOnceErrorCode, string>> = {
  provider_answer_invalid:
    "The payment provider's answer could not be accepted; the charge was set aside for review.",
};

/**
 * Maps an error to its answer: a `ChargeOnceError` by its `httpStatus` and `code`, anything
 * else to a bare 500 that shows nothing of the error. `keyHeader` renames the engine's
 * `idempotencyKey` field to the header the client actually sent.
 */
export function errorResponse(error: unknown, keyHeader: string): HttpAnswer {
  if (!(error instanceof ChargeOnceError) || !isPublic(error)) {
    return answer(500, {}, { code: 'internal_error', message: 'Internal server error.' });
  }
  const headers: Record<string, string> = {};
  if (error instanceof HttpEdgeError) Object.assign(headers, error.headers);
  if (RETRY_AFTER_STATUSES.has(error.httpStatus)) {
    headers['Retry-After'] = String(retryAfterSeconds(error));
  }
  const fields =
    error instanceof InvalidRequestError ? renameFields(error.issues, keyHeader) : undefined;
  return answer(error.httpStatus, headers, {
    code: error.code,
    message:
      error instanceof InvalidRequestError
        ? invalidMessage(fields ?? [])
        : (PUBLIC_MESSAGES[error.code] ?? error.message),
    ...(fields ? { fields } : {}),
  });
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

function renameFields(issues: readonly FieldIssue[], keyHeader: string): FieldIssue[] {
  return issues.map((issue) => ({
    field:
      issue.field === 'idempotencyKey'
        ? keyHeader
        : issue.field === 'request'
          ? 'body'
          : issue.field,
    message: issue.message,
  }));
}

/** The engine's message names its own field names; say it again with the ones on the wire. */
function invalidMessage(fields: readonly FieldIssue[]): string {
  return `Invalid request: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`;
}

function answer(
  status: number,
  headers: Record<string, string>,
  error: { code: string; message: string; fields?: FieldIssue[] },
): HttpAnswer {
  return { status, headers, body: JSON.stringify({ error }) };
}
