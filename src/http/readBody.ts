import type { IncomingMessage } from 'node:http';
import { InvalidConfigurationError } from '../errors.js';
import { HttpEdgeError } from './HttpEdgeError.js';

/** The client went away before its body arrived: there is nobody left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('The client closed the connection before sending the whole body.');
    this.name = 'ClientGoneError';
  }
}

/**
 * Reads the request body, at most `limitBytes` of it.
 *
 * A framework may have read the body already (`express.raw()`, a Fastify buffer parser): a
 * `Buffer` or string left on `req.body` is taken as the body. An already *parsed* body cannot be
 * checked byte for byte against the limit nor told apart from malformed JSON, so it is refused.
 *
 * @throws {HttpEdgeError} `payload_too_large` (413) past the limit.
 * @throws {ClientGoneError} when the client hangs up mid-body.
 * @throws {Error} when a framework parsed the body before the handler saw it.
 */
export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const preRead = (req as IncomingMessage & { body?: unknown }).body;
  if (preRead !== undefined) return fromPreRead(preRead, limitBytes);

  // A declared length over the limit is refused before a byte of it is read.
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) throw tooLarge(limitBytes);

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
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
      resolve(Buffer.concat(chunks, size));
    };
    const onError = () => {
      cleanup();
      reject(new ClientGoneError());
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new ClientGoneError());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

function fromPreRead(body: unknown, limitBytes: number): Buffer {
  const bytes = Buffer.isBuffer(body)
    ? body
    : typeof body === 'string'
      ? Buffer.from(body, 'utf8')
      : null;
  if (bytes === null) {
    throw new InvalidConfigurationError(
      'The request body was parsed before the charge handler ran: mount the handler without a body parser (see createChargeHandler).',
    );
  }
  if (bytes.length > limitBytes) throw tooLarge(limitBytes);
  return bytes;
}

function tooLarge(limitBytes: number): HttpEdgeError {
  return new HttpEdgeError(
    'payload_too_large',
    413,
    `The request body must be at most ${limitBytes} bytes.`,
    // Whatever is left of the body is not read: close instead of draining it.
    { Connection: 'close' },
  );
}
