import type { IncomingMessage, ServerResponse } from 'node:http';
import { createChargeEdge, report, type ChargeEdgeEngine } from './chargeEdge.js';
import { resolveEdgeOptions, type ChargeEdgeOptions } from './edgeOptions.js';
import { errorResponse } from './errorResponse.js';
import { nodeEdgeRequest } from './nodeEdgeRequest.js';
import { writeAnswer } from './writeAnswer.js';

/** Options of {@link createChargeHandler}: see `ChargeEdgeOptions`. */
export type ChargeHandlerOptions = ChargeEdgeOptions<IncomingMessage>;

/**
 * A request listener for node's `http`, also usable as an Express handler or, with
 * `reply.hijack()`, from Fastify (though `chargeOnceFastify` is simpler there). It never
 * rejects: every failure becomes an answer.
 */
export type ChargeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * Creates the HTTP edge of a charge engine for node's `http`: `POST` a `ChargeRequestBody`
 * (JSON) with an `Idempotency-Key` header (bare or quoted) and credentials.
 *
 * Routes by the end of the path, wherever the handler is mounted (mount it for every route you
 * serve, `app.use('/charges', handler)` say): `…/charges/{chargeId}/refunds` takes a
 * `RefundRequestBody` (`engine.processRefund`), `…/charges/{chargeId}/capture` a
 * `CaptureRequestBody` or no body (`engine.processCapture`), and any other path is the charge
 * route, as it always was, except one below a `charges` segment (`/charges/{id}`,
 * `/charges/{id}/refund`), which is 404 `not_found`. A route whose engine method is missing is
 * 501 `not_implemented` (reported to `onError`). The id comes from the path, percent-decoded;
 * a body carrying `chargeId` or `merchantId` is refused. Refund and capture bodies are
 * validated here, with the engine's rules and words, before the engine is called.
 *
 * Answers: an outcome (201 charged, 402 declined, a `reserve` hook's rejection) with its stored
 * status and body, byte for byte, plus `Idempotent-Replayed: true` when it is a replay; 400
 * (`invalid_request`, naming each field) for a missing, repeated, badly quoted or invalid key
 * or an invalid body; 401; 404; 405; 413; 415; 422 for a key reused with a different request (naming
 * the fields that differ); 409 while another attempt holds the key and 503 when the provider
 * or the database is unavailable, both with `Retry-After` in seconds. Error bodies are
 * `{"error":{"code","message","fields"?}}`, or RFC 9457 problem details when `Accept` asks for
 * `application/problem+json`. Every refusal before the engine runs leaves the key unused; one
 * before the body is read (404, 501, 405, 401, a bad key or path id, 415, 413) also closes
 * the connection.
 *
 * The merchant is whoever `authenticate` says: a body that carries `merchantId` is refused
 * (400, field `merchantId`), even when it names the same merchant.
 *
 * The body is read here, or taken from `req.body` when a body parser already read it
 * (`express.json()`, `express.text()`, `express.raw()`); a parsed body counts against
 * `maxBodyBytes` by its compact JSON.
 *
 * Also callable as `createChargeHandler({ engine, ...options })`.
 *
 * @throws {InvalidConfigurationError} when `authenticate` is missing or an option is invalid.
 */
export function createChargeHandler(
  engine: ChargeEdgeEngine,
  options: ChargeHandlerOptions,
): ChargeHandler;
export function createChargeHandler(
  options: ChargeHandlerOptions & { engine: ChargeEdgeEngine },
): ChargeHandler;
export function createChargeHandler(
  first: ChargeEdgeEngine | (ChargeHandlerOptions & { engine: ChargeEdgeEngine }),
  second?: ChargeHandlerOptions,
): ChargeHandler {
  const [engine, options] =
    // `first` may be missing altogether, from JavaScript: the options' check then says so.
    second === undefined && typeof first === 'object' && first !== null && 'engine' in first
      ? [first.engine, first as ChargeHandlerOptions]
      : [first as ChargeEdgeEngine, second as ChargeHandlerOptions];
  const config = resolveEdgeOptions(options);
  const edge = createChargeEdge(engine, config);

  return async (req, res) => {
    const answer = await edge(req, nodeEdgeRequest(req));
    if (answer === null) return;
    try {
      writeAnswer(res, answer);
    } catch (error) {
      // An answer node refuses to write (a stored status out of its range, say): a bare 500.
      report(config.onError, error, req);
      writeAnswer(res, errorResponse(error));
    }
  };
}
