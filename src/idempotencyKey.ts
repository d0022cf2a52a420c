// The idempotency-key rule in plain code, with no dependency: the client (which must bundle for
// browsers without zod or any database code) and the engine's validation share it.

/** The longest idempotency key accepted, in characters. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Printable ASCII, space included: what an HTTP header carries unchanged. */
const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;

/** True for a well-formed idempotency key: 1–255 printable ASCII characters. */
export function isValidIdempotencyKey(key: unknown): key is string {
  return (
    typeof key === 'string' && key.length <= IDEMPOTENCY_KEY_MAX_LENGTH && PRINTABLE_ASCII.test(key)
  );
}

/** What a bare header value cannot carry unchanged: a list separator, a quote, edge spaces. */
const NEEDS_QUOTES = /[,"]|^\s|\s$/;

/**
 * The header value that carries `key` unchanged: the key itself when it is safe bare, else a
 * Structured Field string (RFC 8941 §3.3.3, `"a,b"`). A Fetch `Headers` and every proxy join
 * repeated header lines with ", " and trim white space, so a bare key with a comma would read
 * as two keys and one with a quote or edge spaces as another key; quoted, each is itself.
 */
export function idempotencyKeyHeaderValue(key: string): string {
  if (!NEEDS_QUOTES.test(key)) return key;
  return `"${key.replace(/[\\"]/g, (char) => `\\${char}`)}"`;
}
