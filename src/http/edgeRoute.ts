/**
 * What a request asks for, by its path:
 * - `charge`: wherever the handler is mounted (`/charges`, `/api/charges`, `/`, …), as before
 *   the edge looked at paths at all;
 * - `refund` / `capture`: a path ending in `/charges/{chargeId}/refunds` or
 *   `/charges/{chargeId}/capture`, with the id as it stands in the path (still percent-encoded);
 * - `unknown`: any other path below a `charges` segment (`/charges/{id}`,
 *   `/charges/{id}/refund`, …), answered 404.
 */
export type EdgeRoute =
  | { kind: 'charge' }
  | { kind: 'refund' | 'capture'; chargeIdSegment: string }
  | { kind: 'unknown' };

const CHARGE: EdgeRoute = { kind: 'charge' };
const UNKNOWN: EdgeRoute = { kind: 'unknown' };

/** The last segment of each route below a charge, and the route it names. */
const ACTIONS: ReadonlyMap<string, 'refund' | 'capture'> = new Map([
  ['refunds', 'refund'],
  ['capture', 'capture'],
]);

/**
 * Routes a request by the end of its path, never by where the handler is mounted: the
 * application's router decides what reaches the handler (`app.post('/charges', …)`, a Next.js
 * route file, Fastify's prefix), and a framework may strip a mount prefix, so only the suffix
 * is the same on every adapter.
 *
 * @param path the request's path, without its query, as sent (percent-encoding kept).
 * @param beyondMount true when the adapter knows the path lies below the charge route's own
 * (Fastify's `${path}/*`): such a path is never the charge route itself.
 */
export function routeOf(path: string, beyondMount = false): EdgeRoute {
  const segments = path.split('/');
  // `/charges/` is `/charges`: a trailing slash makes no other resource.
  if (segments.length > 2 && segments[segments.length - 1] === '') segments.pop();
  const n = segments.length;
  const action = ACTIONS.get(segments[n - 1] as string);
  if (action !== undefined && n >= 4 && segments[n - 3] === 'charges') {
    return { kind: action, chargeIdSegment: segments[n - 2] as string };
  }
  const below = segments.lastIndexOf('charges');
  if (beyondMount || (below !== -1 && below < n - 1)) return UNKNOWN;
  return CHARGE;
}

/**
 * The path of a node request's target: the origin form (`/charges?x=1`) or the absolute form
 * (`http://host/charges`) a proxy may send, without its query, with `.` and `..` segments
 * resolved as the Fetch API resolves them, so node and Fetch adapters route alike.
 */
export function pathOfTarget(target: string): string {
  try {
    // Appended to an origin rather than resolved against it: `//host/x` stays a path.
    const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(target)
      ? new URL(target)
      : new URL(`http://edge.invalid${target.startsWith('/') ? '' : '/'}${target}`);
    return url.pathname;
  } catch {
    // Not a URL any client would send: it names no route of ours, so it is the mount's.
    return '/';
  }
}
