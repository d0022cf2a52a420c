import { isErrorOfKind, nameErrorKind, recordErrorKinds } from './errorKinds.js';

/**
 * Every `code` a chargeonce error can carry: the engine's, the HTTP edge's refusals and the
 * client's. `ChargeOnceError` accepts no other, so this list is complete by construction.
 */
export const CHARGE_ONCE_ERROR_CODES = [
  'invalid_request',
  'idempotency_key_reused',
  'idempotency_key_in_use',
  'provider_unavailable',
  'provider_error',
  'charge_needs_attention',
  'store_unavailable',
  'schema_not_migrated',
  'schema_version',
  'invalid_configuration',
  'charge_rejected',
  'simulated_crash',
  // The HTTP edge (`createChargeHandler`), before the engine is asked anything.
  'method_not_allowed',
  'unauthenticated',
  'unsupported_media_type',
  'payload_too_large',
  'not_found',
  'not_implemented',
  // The client (`createChargeClient`), when it gives up.
  'charge_refused',
  'charge_retries_exhausted',
  'charge_aborted',
  // The engine again: a key reaped to its tombstone, a provider answer it refused.
  'idempotency_key_expired',
  'provider_answer_invalid',
  // The admin surface: a key a person tried to resolve is not parked (`KeyNotResolvableError`).
  'key_not_resolvable',
] as const;

/** The stable code of a chargeonce error: a `switch` over it can be checked for exhaustiveness. */
export type ChargeOnceErrorCode = (typeof CHARGE_ONCE_ERROR_CODES)[number];

/**
 * Every error chargeonce throws is a `ChargeOnceError`. Callers switch on the class or on the
 * stable `code`, never on message text. `httpStatus` is what the HTTP edge answers with. The
 * error it stems from, if any, is its `cause`.
 */
export class ChargeOnceError extends Error {
  /**
   * True for an error of this class, thrown by this copy of chargeonce or by another in the same
   * process (its ES module build and its CommonJS build, loaded by `import` and by `require`).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isErrorOfKind(this, value);
  }

  /** Stable, machine-readable identifier of the error kind. */
  readonly code: ChargeOnceErrorCode;
  /** The HTTP status an API built on chargeonce should answer with. */
  readonly httpStatus: number;

  constructor(
    code: ChargeOnceErrorCode,
    httpStatus: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { cause: options?.cause });
    this.name = new.target.name;
    this.code = code;
    this.httpStatus = httpStatus;
    recordErrorKinds(this, new.target);
  }
}

/** One problem found while validating a key or a request. */
export type FieldIssue = { field: string; message: string };

/**
 * The key or the request is invalid. Raised before anything is written, so the key is not
 * consumed: fix the request and retry with the same key.
 */
export class InvalidRequestError extends ChargeOnceError {
  /** Every problem found, each naming its field (`idempotencyKey`, `amountMinor`, …). */
  readonly issues: readonly FieldIssue[];

  constructor(issues: readonly FieldIssue[], options?: { cause?: unknown }) {
    const summary = issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
    super('invalid_request', 400, `Invalid request: ${summary}`, options);
    this.issues = issues;
  }
}

/** The key was already used for a different request (a different fingerprint). */
export class IdempotencyKeyReusedError extends ChargeOnceError {
  /**
   * The request fields whose values differ from the request stored under the key, by name
   * (`amountMinor`, `metadata.order`, …): never a value, so the stored request is not disclosed.
   * Empty when the stored request could not be read.
   */
  readonly differingFields: readonly string[];

  constructor(options?: { cause?: unknown; differingFields?: readonly string[] }) {
    const fields = options?.differingFields ?? [];
    super(
      'idempotency_key_reused',
      422,
      fields.length === 0
        ? 'This idempotency key was already used with a different request.'
        : `This idempotency key was already used with a different request: ${fields.join(', ')} ${fields.length === 1 ? 'differs' : 'differ'}.`,
      options,
    );
    this.differingFields = fields;
  }
}

/** Another attempt holds the key right now. Retry after `retryAfterMs`. */
export class IdempotencyKeyInUseError extends ChargeOnceError {
  /** How long the caller should wait before retrying, in milliseconds. */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, options?: { cause?: unknown }) {
    super(
      'idempotency_key_in_use',
      409,
      'A request with this idempotency key is in progress.',
      options,
    );
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The payment provider failed transiently (timeout, reset, 5xx, 429). Nothing was stored and the
 * claim was released: a retry with the same key resumes and adopts any charge that was made.
 */
export class ProviderUnavailableError extends ChargeOnceError {
  /** A suggested wait before retrying, in milliseconds. */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, options?: { cause?: unknown }) {
    super('provider_unavailable', 503, 'The payment provider is unavailable.', options);
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The provider adapter threw something that is not a `ProviderTransientError`: a bug or a
 * misconfiguration. The claim was released and the key stays at its recovery point.
 */
export class ProviderError extends ChargeOnceError {
  constructor(options?: { cause?: unknown }) {
    super('provider_error', 502, 'The payment provider adapter failed.', options);
  }
}

/**
 * The key is parked in the `failed` state: a person must look at it (`engine.listStuck()` says
 * why), then `engine.requeue(...)` puts it back for the sweeper. Not retryable as is.
 */
export class ChargeNeedsAttentionError extends ChargeOnceError {
  constructor(options?: { cause?: unknown }) {
    super(
      'charge_needs_attention',
      500,
      'This operation could not be finished automatically and needs a person.',
      options,
    );
  }
}

/**
 * The key completed long ago and its stored outcome was reaped; only a tombstone is left. Its
 * outcome may have been a charge, a decline or a cancellation: the charge row, by `chargeId`,
 * says which (charges outlive the reaper). For a refund's or capture's key, `chargeId` is that
 * refund's or capture's own id (its row among the movements, which names its charge), as
 * `engine.list` and `listStuck` give it. It is not attempted again: look it up, or start a new
 * operation with a new key. Not retryable.
 */
export class IdempotencyKeyExpiredError extends ChargeOnceError {
  /** The local charge the key guarded; for a refund's or capture's key, that movement's id. */
  readonly chargeId: string;

  constructor(chargeId: string, options?: { cause?: unknown }) {
    super(
      'idempotency_key_expired',
      410,
      'This idempotency key completed and its stored response has expired; it is not attempted again.',
      options,
    );
    this.chargeId = chargeId;
  }
}

/**
 * The provider answered with a charge that does not match the request (another amount or
 * currency) or does not fit the port's type. Money may have moved, so the key was parked in
 * `failed` for a person (`listStuck()` says why); retries get `ChargeNeedsAttentionError`.
 */
export class ProviderAnswerInvalidError extends ChargeOnceError {
  /** What was wrong with the answer. */
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super(
      'provider_answer_invalid',
      502,
      `The payment provider's answer was refused: ${reason}`,
      options,
    );
    this.reason = reason;
  }
}

/** PostgreSQL could not be reached or dropped the connection. Safe to retry with the same key. */
export class StoreUnavailableError extends ChargeOnceError {
  /** A suggested wait before retrying, in milliseconds. */
  readonly retryAfterMs: number;

  constructor(options?: { cause?: unknown; retryAfterMs?: number }) {
    super('store_unavailable', 503, 'The idempotency store is unavailable.', options);
    this.retryAfterMs = options?.retryAfterMs ?? 1_000;
  }
}

/**
 * chargeonce's schema, tables or columns are missing from the database: `migrate` was never run
 * on it (or on another schema than the engine's `schema`), or not since this version added a
 * migration. Not retryable until it is.
 */
export class SchemaNotMigratedError extends ChargeOnceError {
  /** The schema whose objects are missing, when PostgreSQL named it. */
  readonly schema: string | undefined;

  constructor(schema: string | undefined, options?: { cause?: unknown }) {
    const where = schema === undefined ? "chargeonce's schema" : `schema "${schema}"`;
    const call = schema === undefined ? 'migrate(pool)' : `migrate(pool, { schema: '${schema}' })`;
    super(
      'schema_not_migrated',
      500,
      `The database is not migrated: chargeonce's tables or columns are missing from ${where}. Run ${call} (chargeonce's migrate) on this database first.`,
      options,
    );
    this.schema = schema;
  }
}

/** The database was migrated by a newer chargeonce than this one; refusing to touch it. */
export class SchemaVersionError extends ChargeOnceError {
  constructor(message: string) {
    super('schema_version', 500, message);
  }
}

/**
 * The engine (or a pool, a handler, a client) was given options that cannot work: missing,
 * of the wrong type, or not working together. `cause` holds the underlying error, if any.
 */
export class InvalidConfigurationError extends ChargeOnceError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('invalid_configuration', 500, message, options);
  }
}

/**
 * Thrown by a `reserve` hook to end the charge with a stored outcome (a business refusal such as
 * "out of stock"). The hook's own writes are rolled back; the outcome is stored and replayed.
 */
export class ChargeRejectedError extends ChargeOnceError {
  /** The HTTP status to store and replay. */
  readonly status: number;
  /** The exact response body to store and replay. */
  readonly body: string;

  /**
   * @throws {InvalidConfigurationError} unless `status` is an HTTP status (an integer from 200 to
   * 599) and `body` a string: it is stored and replayed for as long as the key lives.
   */
  constructor(status: number, body: string) {
    if (!Number.isInteger(status) || status < 200 || status > 599) {
      throw new InvalidConfigurationError(
        `ChargeRejectedError needs an HTTP status from 200 to 599, got ${status}`,
      );
    }
    if (typeof body !== 'string') {
      throw new InvalidConfigurationError('ChargeRejectedError needs a string body');
    }
    super('charge_rejected', status, `The charge was rejected with status ${status}.`);
    this.status = status;
    this.body = body;
  }
}

/**
 * An injected crash (tests and the chaos harness only). The attempt stopped where it was, as if
 * the process had died: nothing was cleaned up and the claim was not released.
 */
export class SimulatedCrashError extends ChargeOnceError {
  /** The crash point that fired. */
  readonly point: string;

  constructor(point: string) {
    super('simulated_crash', 500, `Simulated crash at ${point}.`);
    this.point = point;
  }
}

// Each class's kind, for `instanceof` across copies of chargeonce (see errorKinds).
nameErrorKind(ChargeOnceError, 'ChargeOnceError');
nameErrorKind(InvalidRequestError, 'InvalidRequestError');
nameErrorKind(IdempotencyKeyReusedError, 'IdempotencyKeyReusedError');
nameErrorKind(IdempotencyKeyInUseError, 'IdempotencyKeyInUseError');
nameErrorKind(ProviderUnavailableError, 'ProviderUnavailableError');
nameErrorKind(ProviderError, 'ProviderError');
nameErrorKind(ChargeNeedsAttentionError, 'ChargeNeedsAttentionError');
nameErrorKind(IdempotencyKeyExpiredError, 'IdempotencyKeyExpiredError');
nameErrorKind(ProviderAnswerInvalidError, 'ProviderAnswerInvalidError');
nameErrorKind(StoreUnavailableError, 'StoreUnavailableError');
nameErrorKind(SchemaNotMigratedError, 'SchemaNotMigratedError');
nameErrorKind(SchemaVersionError, 'SchemaVersionError');
nameErrorKind(InvalidConfigurationError, 'InvalidConfigurationError');
nameErrorKind(ChargeRejectedError, 'ChargeRejectedError');
nameErrorKind(SimulatedCrashError, 'SimulatedCrashError');
