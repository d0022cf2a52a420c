import { InvalidConfigurationError } from '../errors.js';
import { refuseDeclaredLength, tooLarge } from './bodyLimit.js';
import { ClientGoneError } from './ClientGoneError.js';
import { HttpEdgeError } from './HttpEdgeError.js';
import type { ChargeBody } from './EdgeRequest.js';

/**
 * Reads the body of a Fetch `Request`, at most `limitBytes` of it, chunk by chunk: the limit
 * is enforced on what arrives, not on what `Content-Length` claims.
 *
 * @throws {HttpEdgeError} `payload_too_large` (413) past the limit.
 * @throws {ClientGoneError} when the body breaks off (the client hung up).
 * @throws {InvalidConfigurationError} when something read the body before the handler.
 */
export async function readFetchBody(request: Request, limitBytes: number): Promise<ChargeBody> {
  if (request.bodyUsed) {
    throw new InvalidConfigurationError(
      'The request body was read before the charge handler ran: hand the handler the Request unread (in Hono, c.req.raw before any c.req.json()).',
    );
  }
  refuseDeclaredLength(request.headers.get('content-length'), limitBytes);
  if (request.body === null) return { kind: 'bytes', bytes: new Uint8Array(0) };

  const reader: ReadableStreamDefaultReader<Uint8Array> = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      // The rest is left unread, not cancelled: cancelling may tear the connection down
      // (node adapters destroy the socket) before the 413 is written.
      if (size > limitBytes) throw tooLarge(limitBytes);
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof HttpEdgeError) throw error;
    throw new ClientGoneError();
  } finally {
    reader.releaseLock();
  }
  return { kind: 'bytes', bytes: concat(chunks, size) };
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
