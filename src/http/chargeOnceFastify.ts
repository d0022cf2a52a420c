import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { answerHeaders, hasBody } from './answerHeaders.js';
import { createChargeEdge, report, type ChargeEdge, type ChargeEdgeEngine } from './chargeEdge.js';
import {
  resolveEdgeOptions,
  type AuthenticatedMerchant,
  type ChargeEdgeOptions,
  type ResolvedEdgeOptions,
} from './edgeOptions.js';
import { errorResponse, type HttpAnswer } from './errorResponse.js';
import { nodeEdgeRequest } from './nodeEdgeRequest.js';

// Fastify's types are described here by what the plugin uses, not imported: `chargeonce/http`
// must type-check for users who have no Fastify installed. A `FastifyInstance`,
// `FastifyRequest` and `FastifyReply` are each one of these.

/** What the plugin reads of a Fastify request (a `FastifyRequest` is one). */
export type FastifyRequestLike = {
  readonly raw: IncomingMessage;
  readonly headers: IncomingHttpHeaders;
};

/** What the plugin calls on a Fastify reply (a `FastifyReply` is one). */
export type FastifyReplyLike = {
  code(statusCode: number): unknown;
  headers(values: Record<string, string>): unknown;
  send(payload?: Buffer): unknown;
  hijack(): unknown;
};

type RouteMethod = 'DELETE' | 'GET' | 'OPTIONS' | 'PATCH' | 'POST' | 'PUT';

/** What the plugin does with its Fastify scope (a `FastifyInstance` is one). */
export type FastifyScopeLike = {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(
    contentType: string,
    parser: (
      request: FastifyRequestLike,
      payload: IncomingMessage,
      done: (error: Error | null, body?: unknown) => void,
    ) => void,
  ): void;
  addHook(
    name: 'onRequest',
    hook: (request: FastifyRequestLike, reply: FastifyReplyLike, next: () => void) => void,
  ): unknown;
  route(options: {
    method: RouteMethod[];
    url: string;
    handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => Promise<unknown>;
  }): unknown;
};

/** Options of {@link chargeOnceFastify}. */
export type ChargeOnceFastifyOptions = Omit<
  ChargeEdgeOptions<FastifyRequestLike>,
  'authenticate' | 'onError'
> & {
  /** The charge engine (`createChargeEngine`). */
  engine: ChargeEdgeEngine;
  /**
   * The charge route's path, under the prefix the plugin is registered with. The plugin also
   * takes every path below it, where the edge serves `{chargeId}/refunds` and
   * `{chargeId}/capture` when the full path ends in `/charges` (the default), and answers 404
   * to the rest.
   * @defaultValue `'/charges'`
   */
  path?: string;
  /**
   * As `ChargeEdgeOptions.authenticate`, given the `FastifyRequest` (a function typed for
   * `FastifyRequest`, decorations included, is accepted).
   */
  authenticate(request: FastifyRequestLike): AuthenticatedMerchant | Promise<AuthenticatedMerchant>;
  /** As `ChargeEdgeOptions.onError`, given the `FastifyRequest`. */
  onError?(error: unknown, request: FastifyRequestLike): void;
};

// Every method reaches the handler, which answers 405 to all but POST, as the node handler does;
// Fastify adds HEAD beside GET.
const METHODS: RouteMethod[] = ['DELETE', 'GET', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

/**
 * The charge endpoints as a Fastify plugin:
 * `app.register(chargeOnceFastify, { engine, authenticate, path: '/charges' })` serves
 * `POST /charges`, `POST /charges/:id/refunds` and `POST /charges/:id/capture`. Same statuses,
 * headers and bodies as {@link createChargeHandler}, answered through Fastify's reply (its hooks
 * and logging see it).
 *
 * The plugin keeps its own scope: there it removes Fastify's body parsers, so the body reaches
 * the edge unread and is checked the same way on every platform (the 413 at `maxBodyBytes`
 * while it streams, UTF-8, JSON, the 415); the application's other routes keep theirs.
 *
 * @throws {InvalidConfigurationError} (through `register`) when `engine` or `authenticate` is
 * missing or an option is invalid.
 */
export function chargeOnceFastify(
  scope: FastifyScopeLike,
  options: ChargeOnceFastifyOptions,
  done: (error?: Error) => void,
): void {
  let config: ResolvedEdgeOptions<FastifyRequestLike>;
  let edge: ChargeEdge<FastifyRequestLike>;
  try {
    config = resolveEdgeOptions<FastifyRequestLike>(options);
    edge = createChargeEdge(options.engine, config);
  } catch (error) {
    done(error as Error);
    return;
  }
  scope.removeAllContentTypeParsers();
  // Any body, any type, is left unread for the edge, which reads, limits and judges it.
  scope.addContentTypeParser('*', (_request, _payload, parsed) => parsed(null));
  // A blank `Content-Type:` is no type, to the edge as on every other platform (a JSON body is
  // read as JSON); Fastify would refuse it with a 415 of its own before any parser runs.
  scope.addHook('onRequest', (request, _reply, next) => {
    const contentType = request.raw.headers['content-type'];
    if (contentType !== undefined && contentType.trim() === '') {
      delete request.raw.headers['content-type'];
    }
    next();
  });
  const path = options.path ?? '/charges';
  const route = (url: string, beyondMount: boolean) =>
    scope.route({
      method: METHODS,
      url,
      handler: async (request, reply) => {
        const answer = await edge(request, nodeEdgeRequest(request.raw, beyondMount));
        if (answer === null) {
          // Nobody to answer: Fastify must not wait for a reply that will never be sent.
          reply.hijack();
          return;
        }
        try {
          send(reply, answer);
        } catch (error) {
          // An answer Fastify refuses (a stored status out of its range, say): a bare 500.
          report(config.onError, error, request);
          send(reply, errorResponse(error));
        }
        return reply;
      },
    });
  route(path, false);
  // Everything below the charge route reaches the edge too, which routes it as the other
  // adapters do: a refund, a capture, or a 404 in the edge's own format.
  route(`${path.replace(/\/+$/, '')}/*`, true);
  done();
}

function send(reply: FastifyReplyLike, answer: HttpAnswer): void {
  // The status first: if Fastify refuses it, no header of this answer is set yet.
  reply.code(answer.status);
  reply.headers(answerHeaders(answer));
  // Bytes, not a string: Fastify would add `; charset=utf-8` to the JSON type of a string, and
  // every adapter must send the same headers.
  reply.send(hasBody(answer) ? Buffer.from(answer.body, 'utf8') : undefined);
}
