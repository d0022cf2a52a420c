import { InvalidRequestError } from '../errors.js';
import { idempotencyKeyIssues } from '../request.js';
import { parseStructuredString } from './parseStructuredString.js';

const SENT_ONCE = 'must be sent once';
const MALFORMED_QUOTING =
  'is badly quoted: send a bare key, or one "string" with only \\" and \\\\ escaped and nothing after it';

/**
 * The idempotency key from the values of its header, checked before any body is read.
 *
 * The key may be bare (`abc`) or a Structured Field string (`"abc"`, as the IETF draft on the
 * header writes it): both are the same key. There must be exactly one. Node keeps repeated
 * header lines apart, but a Fetch `Headers` (and any proxy, RFC 9110 §5.3) joins them with
 * ", ", so a bare key may not hold a comma, nor a quote: `a, b` is two keys on every platform,
 * and a key that needs either is sent quoted.
 *
 * @throws {InvalidRequestError} naming the header when the key is missing, repeated, badly
 * quoted, or not a valid key (1–255 printable ASCII characters).
 */
export function readIdempotencyKey(values: readonly string[], header: string): string {
  if (values.length === 0) throw keyError(header, 'is required');
  if (values.length > 1) throw keyError(header, SENT_ONCE);
  const key = unquote(values[0] as string, header);
  const issues = idempotencyKeyIssues(key);
  if (issues.length > 0) {
    throw new InvalidRequestError(issues.map((issue) => ({ ...issue, field: header })));
  }
  return key;
}

function unquote(raw: string, header: string): string {
  // Header values arrive trimmed of surrounding white space (RFC 9110 §5.5), on every platform.
  const value = raw.trim();
  if (!value.startsWith('"')) {
    if (value.includes(',')) throw keyError(header, SENT_ONCE);
    if (value.includes('"')) throw keyError(header, MALFORMED_QUOTING);
    return value;
  }
  const parsed = parseStructuredString(value);
  if (!parsed.ok) throw keyError(header, MALFORMED_QUOTING);
  const rest = parsed.rest.trimStart();
  if (rest === '') return parsed.value;
  // `"a", "b"`: a list, which is what two header lines become once joined.
  if (rest.startsWith(',')) throw keyError(header, SENT_ONCE);
  // Parameters (`"a";p=1`) included: none is defined for this header, so none is guessed at.
  throw keyError(header, MALFORMED_QUOTING);
}

function keyError(header: string, message: string): InvalidRequestError {
  return new InvalidRequestError([{ field: header, message }]);
}
