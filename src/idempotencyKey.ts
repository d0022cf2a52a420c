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
