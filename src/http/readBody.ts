import type { IncomingMessage } from 'node:http';
import { InvalidConfigurationError } from '../errors.js';
import { checkParsedSize, refuseDeclaredLength, tooLarge } from './bodyLimit.js';
import { ClientGoneError } from './ClientGoneError.js';
import type { ChargeBody } from './EdgeRequest.js';

/** A node request, with the `body` a framework's body parser may have left on it. */
export type NodeRequest = IncomingMessage & { body?: unknown };

/**
 * Reads the body of a node request, at most `limitBytes` of it.
 *
 * When a framework has already read the stream, what it left on `req.body` is the body: a
 * `Buffer` or string (`express.raw()`, `express.text()`) as its bytes, anything else
 * (`express.json()`) as the parsed body, measured by its compact JSON. While the stream is
 * unread, it is read here, whatever `req.body` holds (Express 4 leaves `{}` there when its
 * parser skipped the request).
 *
 * @throws {HttpEdgeError} `payload_too_large` (413) past the limit.
 * @throws {ClientGoneError} when the client hangs up before the body is whole.
 * @throws {InvalidConfigurationError} when a framework read the stream and left no body.
 */
export async function readBody(req: NodeRequest, limitBytes: number): Promise<ChargeBody> {
  if (req.readableEnded) return fromFramework(req.body, limitBytes);
  // Gone while `authenticate` ran: the stream will never end, nor emit `close` again. (A stream
  // read to its end is destroyed too, which is why this comes second.)
  if (req.destroyed) throw new ClientGoneError();

  refuseDeclaredLength(req.headers['content-length'], limitBytes);

  return new Promise<ChargeBody>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        // Stop buffering at once; the answer closes the connection, so the rest is never read.
        cleanup();
        req.pause();
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ kind: 'bytes', bytes: Buffer.concat(chunks, size) });
    };
    const onGone = () => {
      cleanup();
      reject(new ClientGoneError());
    };
    const onClose = () => {
      if (!req.readableEnded) onGone();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onClose);
  });
}

function fromFramework(body: unknown, limitBytes: number): ChargeBody {
  if (body === undefined) {
    throw new InvalidConfigurationError(
      'The request body was read before the charge handler ran and nothing was left on req.body: ' +
        'mount the handler where the body is either unread or left on req.body (see createChargeHandler).',
    );
  }
  if (typeof body === 'string' || body instanceof Uint8Array) {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    if (bytes.byteLength > limitBytes) throw tooLarge(limitBytes);
    return { kind: 'bytes', bytes };
  }
  checkParsedSize(body, limitBytes);
  return { kind: 'parsed', value: body };
}
