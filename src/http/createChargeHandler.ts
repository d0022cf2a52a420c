import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChargeEngine } from '../engine/createChargeEngine.js';
import { InvalidConfigurationError } from '../errors.js';
import { errorResponse, type HttpAnswer } from './errorResponse.js';
import { HttpEdgeError } from './HttpEdgeError.js';
import { parseChargeBody } from './parseChargeBody.js';
import { ClientGoneError, readBody } from './readBody.js';
import { readIdempotencyKey } from './readIdempotencyKey.js';
import { writeAnswer } from './writeAnswer.js';

/** Options of {@link createChargeHandler}. */
export type ChargeHandlerOptions = {
  /**
   * Says which merchant the request speaks for, from its credentials (a token, a client
   * certificate, a session). It runs before anything else is read, so a refused request
   * consumes no key. Return `null` (or `undefined`, or `''`) to answer 401; throw a
   * `ChargeOnceError` (its code one of `CHARGE_ONCE_ERROR_CODES`) to answer with its status and
   * code; any other throw answers 500.
   *
   * Required: there is no default, because any default would let a request charge for a
   * merchant nobody vouched for.
   */
  authenticate: (
    req: IncomingMessage,
  ) => string | null | undefined | Promise<string | null | undefined>;
  /**
   * The largest body accepted, in bytes; past it the answer is 413 and the key is not consumed.
   * @defaultValue `102_400` (100 KiB: a request with full metadata fits)
   */
  maxBodyBytes?: number;
  /**
   * The header that carries the idempotency key.
   * @defaultValue `'Idempotency-Key'`
   */
  keyHeader?: string;
  /**
   * The challenge a 401 carries in `WWW-Authenticate`, as RFC 9110 requires one.
   * @defaultValue `'Bearer'`
   */
  wwwAuthenticate?: string;
  /**
   * Called with every error answered with a 5xx, for the operator's log: the answer itself says
   * nothing of an unexpected error. Should it throw (or reject), that goes to `console.error`
   * and the answer is written all the same.
   * @defaultValue writes the error to `console.error`
   */
  onError?: (error: unknown, req: IncomingMessage) => void;
};

/**
 * A request listener for node's `http`, also usable as an Express handler or, with
 * `reply.hijack()`, from Fastify. It never rejects: every failure becomes an answer.
 */
export type ChargeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const DEFAULTS = {
  maxBodyBytes: 102_400,
  keyHeader: 'Idempotency-Key',
  wwwAuthenticate: 'Bearer',
} as const;

/**
 * Creates the HTTP edge of a charge engine: `POST` a `ChargeRequestBody` (JSON) with an
 * `Idempotency-Key` header and credentials.
 *
 * Answers: an outcome (201 charged, 402 declined, a `reserve` hook's rejection) with its stored
 * status and body, byte for byte, plus `Idempotent-Replayed: true` when it is a replay; 400
 * (`invalid_request`, naming each field) for a missing or invalid key or body; 401; 405; 413;
 * 415; 422 for a key reused with a different request; 409 while another attempt holds the key
 * and 503 when the provider or the database is unavailable, both with `Retry-After` in
 * seconds. Error bodies are `{"error":{"code","message","fields"?}}`. Every refusal before the
 * engine runs leaves the key unused.
 *
 * The merchant is whoever `authenticate` says: a body that carries `merchantId` is refused
 * (400, field `merchantId`), even when it names the same merchant.
 *
 * The handler reads the body itself, so mount it where no body parser runs first (Express: no
 * `express.json()` on the route, though `express.raw()` is fine; Fastify: a pass-through
 * content-type parser in the route's scope and `reply.hijack()`).
 *
 * @throws {InvalidConfigurationError} when `authenticate` is missing or an option is invalid.
 */
export function createChargeHandler(
  engine: Pick<ChargeEngine, 'processCharge'>,
  options: ChargeHandlerOptions,
): ChargeHandler {
  const config = resolveOptions(options);

  const handle = async (req: IncomingMessage): Promise<HttpAnswer> => {
    if (req.method !== 'POST') {
      throw new HttpEdgeError('method_not_allowed', 405, 'Use POST.', { Allow: 'POST' });
    }
    const merchantId = await config.authenticate(req);
    if (merchantId === null || merchantId === undefined || merchantId === '') {
      throw new HttpEdgeError('unauthenticated', 401, 'Authentication is required.', {
        'WWW-Authenticate': config.wwwAuthenticate,
      });
    }
    if (typeof merchantId !== 'string') {
      throw new InvalidConfigurationError(
        'authenticate must return a merchant id (a string) or null',
      );
    }
    const key = readIdempotencyKey(req, config.keyHeader);
    requireJson(req);
    const request = parseChargeBody(await readBody(req, config.maxBodyBytes), merchantId);
    const outcome = await engine.processCharge(key, request);
    return {
      status: outcome.httpStatus,
      // Only a replay says so: the first answer of a decline or a rejection is not one.
      headers: outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {},
      body: outcome.body,
    };
  };

  return async (req, res) => {
    let answer: HttpAnswer;
    try {
      answer = await handle(req);
    } catch (error) {
      // The engine has finished whatever it started; there is just nobody left to tell.
      if (error instanceof ClientGoneError) return;
      answer = errorResponse(error, config.keyHeader);
      if (answer.status >= 500) report(config.onError, error, req);
    }
    try {
      writeAnswer(res, answer);
    } catch (error) {
      // An answer node refuses to write (a stored status out of its range, say): a bare 500.
      report(config.onError, error, req);
      writeAnswer(res, errorResponse(error, config.keyHeader));
    }
  };
}

/**
 * Hands a 5xx error to `onError`. The handler never rejects, whatever `onError` does: a throw (or
 * a rejection, from an async one) goes to `console.error` and the answer is written anyway.
 */
function report(
  onError: (error: unknown, req: IncomingMessage) => void,
  error: unknown,
  req: IncomingMessage,
): void {
  const failed = (failure: unknown) =>
    console.error('chargeonce: onError failed while reporting a 5xx', failure, error);
  try {
    const result: unknown = onError(error, req);
    if (result instanceof Promise) result.catch(failed);
  } catch (failure) {
    failed(failure);
  }
}

/** A body that says it is something else than JSON is refused; no `Content-Type` is let by. */
function requireJson(req: IncomingMessage): void {
  const contentType = req.headers['content-type'];
  if (contentType === undefined) return;
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  if (mediaType === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType)) {
    return;
  }
  throw new HttpEdgeError('unsupported_media_type', 415, 'The body must be application/json.');
}

function resolveOptions(options: ChargeHandlerOptions) {
  if (typeof options?.authenticate !== 'function') {
    throw new InvalidConfigurationError(
      'authenticate is required: it says which merchant a request charges for',
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULTS.maxBodyBytes;
  if (!(Number.isInteger(maxBodyBytes) && maxBodyBytes > 0)) {
    throw new InvalidConfigurationError('maxBodyBytes must be a positive integer');
  }
  const keyHeader = options.keyHeader ?? DEFAULTS.keyHeader;
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(keyHeader)) {
    throw new InvalidConfigurationError('keyHeader must be a valid HTTP header name');
  }
  return {
    authenticate: options.authenticate,
    maxBodyBytes,
    keyHeader,
    wwwAuthenticate: options.wwwAuthenticate ?? DEFAULTS.wwwAuthenticate,
    onError:
      options.onError ??
      ((error: unknown) => console.error('chargeonce: the charge handler answered 5xx', error)),
  };
}
