import type { IncomingMessage } from 'node:http';
import { InvalidRequestError } from '../errors.js';

/**
 * The idempotency key from its header. Its format is the engine's to check; here only that
 * there is exactly one: node joins repeated unknown headers with ", ", which would turn two
 * keys into a third, valid-looking one.
 *
 * @throws {InvalidRequestError} naming the header when it is missing or repeated.
 */
export function readIdempotencyKey(req: IncomingMessage, header: string): string {
  const values = req.headersDistinct[header.toLowerCase()];
  if (values === undefined || values.length === 0) {
    throw new InvalidRequestError([{ field: header, message: 'is required' }]);
  }
  if (values.length > 1) {
    throw new InvalidRequestError([{ field: header, message: 'must be sent once' }]);
  }
  return values[0] as string;
}
