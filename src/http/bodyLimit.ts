import { InvalidRequestError } from '../errors.js';
import { HttpEdgeError } from './HttpEdgeError.js';

/** The 413 of a body past `limitBytes`. */
export function tooLarge(limitBytes: number): HttpEdgeError {
  return new HttpEdgeError(
    'payload_too_large',
    413,
    `The request body must be at most ${limitBytes} bytes.`,
    // Whatever is left of the body is not read: close instead of draining it.
    { Connection: 'close' },
  );
}

/** A declared `Content-Length` over the limit is refused before a byte of the body is read. */
export function refuseDeclaredLength(contentLength: string | null | undefined, limit: number) {
  const declared = Number(contentLength);
  if (contentLength && Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
}

const utf8 = new TextEncoder();

/**
 * A body a framework already parsed, measured as its compact JSON re-serialization: the bytes
 * on the wire are gone, and this is the size of what the limit protects (what is validated
 * and stored). White space and escapes the client sent do not count; the parser's own limit
 * bounds those.
 *
 * @throws {HttpEdgeError} `payload_too_large` (413) past the limit.
 * @throws {InvalidRequestError} naming `body` when the value has no JSON text.
 */
export function checkParsedSize(value: unknown, limitBytes: number): void {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    // A cycle or a BigInt: no JSON text makes that, so it is no JSON body.
    throw new InvalidRequestError([{ field: 'body', message: 'must be valid JSON' }], {
      cause: error,
    });
  }
  // Characters are at most 3 bytes each: a short enough text fits without encoding it.
  if (text !== undefined && text.length * 3 > limitBytes) {
    if (utf8.encode(text).byteLength > limitBytes) throw tooLarge(limitBytes);
  }
}
