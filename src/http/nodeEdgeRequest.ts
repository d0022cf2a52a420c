import type { EdgeRequest } from './EdgeRequest.js';
import { readBody, type NodeRequest } from './readBody.js';

/** A node request (`IncomingMessage`, Express's, Fastify's `request.raw`) as the core sees it. */
export function nodeEdgeRequest(req: NodeRequest): EdgeRequest {
  return {
    method: req.method ?? '',
    // `headersDistinct` keeps repeated lines apart, where `headers` would join them.
    headerValues: (name) => req.headersDistinct[name.toLowerCase()] ?? [],
    // Not `req.destroyed` alone: a request whose body was read to the end is destroyed too.
    isGone: () => (req.destroyed && !req.readableEnded) || req.socket?.destroyed === true,
    readBody: (limitBytes) => readBody(req, limitBytes),
  };
}
