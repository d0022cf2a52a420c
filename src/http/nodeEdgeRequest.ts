import type { EdgeRequest } from './EdgeRequest.js';
import { pathOfTarget } from './edgeRoute.js';
import { readBody, type NodeRequest } from './readBody.js';

/** A node request (`IncomingMessage`, Express's, Fastify's `request.raw`) as the core sees it. */
export function nodeEdgeRequest(req: NodeRequest, beyondMount = false): EdgeRequest {
  // Express rewrites `req.url` below a mount point (`app.use('/charges', …)` leaves
  // `/{id}/refunds`); `originalUrl` keeps what the client sent.
  const originalUrl = (req as NodeRequest & { originalUrl?: unknown }).originalUrl;
  return {
    method: req.method ?? '',
    path: pathOfTarget(typeof originalUrl === 'string' ? originalUrl : (req.url ?? '/')),
    beyondMount,
    // `headersDistinct` keeps repeated lines apart, where `headers` would join them.
    headerValues: (name) => req.headersDistinct[name.toLowerCase()] ?? [],
    // Not `req.destroyed` alone: a request whose body was read to the end is destroyed too.
    isGone: () => (req.destroyed && !req.readableEnded) || req.socket?.destroyed === true,
    readBody: (limitBytes) => readBody(req, limitBytes),
  };
}
