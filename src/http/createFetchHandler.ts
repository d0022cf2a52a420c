import { answerHeaders, hasBody } from './answerHeaders.js';
import { createChargeEdge, report, type ChargeEdgeEngine } from './chargeEdge.js';
import type { EdgeRequest } from './EdgeRequest.js';
import { resolveEdgeOptions, type ChargeEdgeOptions } from './edgeOptions.js';
import { errorResponse, type HttpAnswer } from './errorResponse.js';
import { readFetchBody } from './readFetchBody.js';

/** Options of {@link createFetchHandler}: the engine, and the options every edge takes. */
export type FetchHandlerOptions = ChargeEdgeOptions<Request> & {
  /** The charge engine (`createChargeEngine`); it needs a process that reaches PostgreSQL. */
  engine: ChargeEdgeEngine;
};

/** A Fetch-API handler. It never rejects: every failure becomes a `Response`. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * The status of the `Response` given when the client is already gone: nobody reads it, but a
 * Fetch handler must return something (499, "client closed request", as nginx logs it).
 */
const CLIENT_GONE_STATUS = 499;

/**
 * Creates the HTTP edge of a charge engine as a Fetch-API handler, for Hono
 * (`app.post('/charges', h)` and `app.post('/charges/*', h)`, with `h = (c) => handler(c.req.raw)`),
 * Next.js route handlers (`export const POST = handler`, in `charges/route.ts` and in
 * `charges/[id]/refunds/route.ts`), Bun and Deno servers. Same routes, statuses, headers and
 * bodies as {@link createChargeHandler}; `authenticate` gets the `Request`.
 *
 * Hand it the `Request` with its body unread. Fetch joins repeated header lines with ", ",
 * which is why a bare key may not hold a comma (see the README): two keys are refused alike on
 * every platform.
 *
 * @throws {InvalidConfigurationError} when `engine` or `authenticate` is missing or an option is
 * invalid.
 */
export function createFetchHandler(options: FetchHandlerOptions): FetchHandler {
  const config = resolveEdgeOptions(options);
  const edge = createChargeEdge(options.engine, config);

  return async (request) => {
    const answer = await edge(request, fetchEdgeRequest(request));
    if (answer === null) return new Response(null, { status: CLIENT_GONE_STATUS });
    try {
      return toResponse(answer);
    } catch (error) {
      // An answer `Response` refuses (a stored status out of its range, say): a bare 500.
      report(config.onError, error, request);
      return toResponse(errorResponse(error));
    }
  };
}

function toResponse(answer: HttpAnswer): Response {
  return new Response(hasBody(answer) ? answer.body : null, {
    status: answer.status,
    headers: answerHeaders(answer),
  });
}

function fetchEdgeRequest(request: Request): EdgeRequest {
  return {
    method: request.method.toUpperCase(),
    path: pathOfRequest(request),
    headerValues: (name) => {
      const value = request.headers.get(name);
      return value === null ? [] : [value];
    },
    isGone: () => request.signal.aborted,
    readBody: (limitBytes) => readFetchBody(request, limitBytes),
  };
}

function pathOfRequest(request: Request): string {
  try {
    return new URL(request.url).pathname;
  } catch {
    // A `Request` always has an absolute URL; a look-alike without one is routed as the mount.
    return '/';
  }
}
