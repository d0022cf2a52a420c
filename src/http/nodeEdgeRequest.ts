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
    // `headersDistinct` keeps repeated lines apart, where `headers` would join them. A request
    // made without a socket (light-my-request, as `fastify.inject()` uses) has none: its raw
    // lines say the same.
    headerValues: (name) =>
      req.headersDistinct
        ? (req.headersDistinct[name.toLowerCase()] ?? [])
        : rawHeaderValues(req, name.toLowerCase()),
    // Not `req.destroyed` alone: a request whose body was read to the end is destroyed too.
    isGone: () => (req.destroyed && !req.readableEnded) || req.socket?.destroyed === true,
    readBody: (limitBytes) => readBody(req, limitBytes),
  };
}

/** The values of header `name` (lower case), one per line, from a request's raw header lines. */
function rawHeaderValues(req: NodeRequest, name: string): string[] {
  const raw: unknown = req.rawHeaders;
  if (Array.isArray(raw)) {
    const values: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if (String(raw[i]).toLowerCase() === name) values.push(String(raw[i + 1]));
    }
    return values;
  }
  const value: unknown = (req.headers as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return value.map(String);
  return typeof value === 'string' ? [value] : [];
}
