/** How error answers are written: `{"error":…}` (the default) or RFC 9457 problem details. */
export type ErrorFormat = 'json' | 'problem';

export const PROBLEM_JSON = 'application/problem+json';

/**
 * Problem details when the client's `Accept` asks for `application/problem+json` at least as
 * much as for `application/json`; `{"error":…}` otherwise, `*` wildcards included, so a client
 * that says nothing particular keeps today's bodies.
 */
export function negotiateErrorFormat(accept: string): ErrorFormat {
  let problem = 0;
  let json = 0;
  // Bounded: a header is at most what the server lets in, and only two types are looked for.
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';');
    const mediaType = type.trim().toLowerCase();
    if (mediaType !== PROBLEM_JSON && mediaType !== 'application/json') continue;
    const weight = qualityOf(params);
    if (mediaType === PROBLEM_JSON) problem = Math.max(problem, weight);
    else json = Math.max(json, weight);
  }
  return problem > 0 && problem >= json ? 'problem' : 'json';
}

/** The `q` parameter of a media range (RFC 9110 §12.4.2), 1 when absent, 0 when malformed. */
function qualityOf(params: readonly string[]): number {
  for (const param of params) {
    const [name = '', value = ''] = param.split('=', 2);
    if (name.trim().toLowerCase() !== 'q') continue;
    const q = value.trim();
    return /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(q) ? Number(q) : 0;
  }
  return 1;
}
