import { InvalidConfigurationError, InvalidRequestError, type FieldIssue } from '../errors.js';
import { ClientGoneError } from './ClientGoneError.js';
import type { EdgeRequest } from './EdgeRequest.js';
import {
  EDGE_OPERATIONS,
  type ChargeEdgeEngine,
  type EdgeCall,
  type EdgeOperation,
} from './edgeOperations.js';
import type { ResolvedEdgeOptions } from './edgeOptions.js';
import { routeOf } from './edgeRoute.js';
import { errorResponse, type ErrorStyle, type HttpAnswer } from './errorResponse.js';
import { HttpEdgeError } from './HttpEdgeError.js';
import { negotiateErrorFormat } from './negotiateErrorFormat.js';
import { chargeIdOfSegment } from './parseMovementBody.js';
import { readIdempotencyKey } from './readIdempotencyKey.js';
import { noteRefusedAtEdge, type RefusedOperation } from '../engine/refusedAtEdge.js';

export type { ChargeEdgeEngine } from './edgeOperations.js';

/**
 * The HTTP edge as a function of a request, whatever carries it: every adapter (node handler,
 * Fetch handler, Fastify plugin) runs this and only writes what it returns, so all of them
 * answer with the same statuses, headers and bodies. `null`: the client is gone, write nothing.
 * It never rejects.
 */
export type ChargeEdge<Req> = (native: Req, request: EdgeRequest) => Promise<HttpAnswer | null>;

const NOT_FOUND_MESSAGE =
  'No such route. Below a charge there are only POST …/charges/{chargeId}/refunds and POST …/charges/{chargeId}/capture.';

/**
 * Creates the shared core of the HTTP edge.
 * @throws {InvalidConfigurationError} when `engine` has no `processCharge`, or has a
 * `processRefund` or `processCapture` that is not a function.
 */
export function createChargeEdge<Req>(
  engine: ChargeEdgeEngine,
  config: ResolvedEdgeOptions<Req>,
): ChargeEdge<Req> {
  if (typeof engine?.processCharge !== 'function') {
    throw new InvalidConfigurationError('engine is required: a charge engine (createChargeEngine)');
  }
  for (const method of ['processRefund', 'processCapture'] as const) {
    if (engine[method] !== undefined && typeof engine[method] !== 'function') {
      throw new InvalidConfigurationError(`engine.${method} must be a function when present`);
    }
  }
  return async (native, request) => {
    const style: ErrorStyle = {
      format: negotiateErrorFormat(headerOf(request, 'accept')),
      problemTypeBase: config.problemTypeBase,
    };
    let bodyRead = false;
    // The route's operation once known, and whether the engine was asked: a 400 refused before
    // it was is the edge's own, counted with the engine's (`chargeonce.invalid_requests`).
    let refusedOperation: RefusedOperation | null = null;
    let engineAsked = false;
    try {
      // Everything a request can be refused for without its body is checked before the body
      // is read: a refusal costs no upload, and the key stays unused.
      const route = routeOf(request.path, request.beyondMount);
      if (route.kind === 'unknown') throw new HttpEdgeError('not_found', 404, NOT_FOUND_MESSAGE);
      const operation: EdgeOperation = EDGE_OPERATIONS[route.kind];
      refusedOperation = operation.name;
      requireServed(engine, operation);
      if (request.method !== 'POST') {
        throw new HttpEdgeError('method_not_allowed', 405, 'Use POST.', { Allow: 'POST' });
      }
      const merchantId = await config.authenticate(native);
      // A client that hung up while `authenticate` ran left a body that will never arrive.
      if (request.isGone()) throw new ClientGoneError();
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
      const call = readCall(
        request,
        config.keyHeader,
        merchantId,
        route.kind === 'charge' ? undefined : route.chargeIdSegment,
      );
      requireJson(headerOf(request, 'content-type'));

      const body = await request.readBody(config.maxBodyBytes);
      bodyRead = true;
      const parsed = operation.parse(call, body);
      engineAsked = true;
      const outcome = await operation.run(engine, call, parsed);
      return {
        status: outcome.httpStatus,
        // Only a replay says so: the first answer of a decline or a rejection is not one.
        headers: outcome.replayed ? { 'Idempotent-Replayed': 'true' } : {},
        body: outcome.body,
      };
    } catch (error) {
      // The client hung up before its body was whole: nothing was asked of the engine, and
      // there is nobody left to answer.
      if (error instanceof ClientGoneError) return null;
      if (error instanceof InvalidRequestError && !engineAsked && refusedOperation !== null) {
        noteRefusedAtEdge(engine, refusedOperation);
      }
      const answer = errorResponse(error, style);
      // Refused before its body was read: close rather than read (or drain) a body that
      // nobody will use, however long the client keeps sending.
      if (!bodyRead) answer.headers['Connection'] = 'close';
      if (answer.status >= 500) report(config.onError, error, native);
      return answer;
    }
  };
}

/**
 * A route whose engine method is missing answers 501: the server does not offer the operation,
 * which no retry changes. The operator hears of it through `onError` (a 5xx), with the reason.
 */
function requireServed(engine: ChargeEdgeEngine, operation: EdgeOperation): void {
  if (typeof engine[operation.method] === 'function') return;
  throw new HttpEdgeError(
    'not_implemented',
    501,
    `${operation.served} are not served here.`,
    {},
    {
      cause: new InvalidConfigurationError(
        `the engine given to the HTTP edge has no ${operation.method}`,
      ),
    },
  );
}

/**
 * The key, and the path's charge id below a charge, checked together before the body is read:
 * one 400 names both when both are wrong.
 */
function readCall(
  request: EdgeRequest,
  keyHeader: string,
  merchantId: string,
  chargeIdSegment: string | undefined,
): EdgeCall {
  const issues: FieldIssue[] = [];
  let key = '';
  try {
    key = readIdempotencyKey(request.headerValues(keyHeader), keyHeader);
  } catch (error) {
    if (!(error instanceof InvalidRequestError)) throw error;
    issues.push(...error.issues);
  }
  let chargeId = '';
  if (chargeIdSegment !== undefined) {
    const fromPath = chargeIdOfSegment(chargeIdSegment);
    chargeId = fromPath.chargeId;
    issues.push(...fromPath.issues);
  }
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return { key, merchantId, chargeId };
}

/** A header as one value: repeated lines joined with ", ", as Fetch would join them. */
function headerOf(request: EdgeRequest, name: string): string {
  return request.headerValues(name).join(', ');
}

/** A body that says it is something else than JSON is refused; no `Content-Type` is let by. */
function requireJson(contentType: string): void {
  if (contentType === '') return;
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  if (mediaType === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType)) {
    return;
  }
  throw new HttpEdgeError('unsupported_media_type', 415, 'The body must be application/json.');
}

/**
 * Hands a 5xx error to `onError`. The edge never rejects, whatever `onError` does: a throw (or
 * a rejection, from an async one) goes to `console.error` and the answer is written anyway.
 */
export function report<Req>(
  onError: (error: unknown, req: Req) => void,
  error: unknown,
  req: Req,
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
