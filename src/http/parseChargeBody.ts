import { InvalidRequestError } from '../errors.js';
import type { ChargeRequest } from '../request.js';

/**
 * What a client sends to the charge endpoint: a charge request without the merchant, which
 * comes from authentication and never from the body.
 */
export type ChargeRequestBody = Omit<ChargeRequest, 'merchantId'>;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses the body into a request for `merchantId`. Only the shape the handler owns is checked
 * here (UTF-8, JSON, an object, no `merchantId`); the fields are the engine's to validate, so
 * the rules live in one place.
 *
 * @throws {InvalidRequestError} naming `body`, or `merchantId` when the body carries one.
 */
export function parseChargeBody(bytes: Buffer, merchantId: string): ChargeRequest {
  if (bytes.length === 0) throw bodyError('is required');
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (error) {
    throw bodyError('must be UTF-8', error);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw bodyError('must be valid JSON', error);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw bodyError('must be a JSON object');
  }
  // The merchant is who authenticated. Taking one from the body, even an equal one, would
  // let a body speak for a merchant; refusing it makes a confused client fail loudly.
  if (Object.hasOwn(parsed, 'merchantId')) {
    throw new InvalidRequestError([
      { field: 'merchantId', message: 'must not be sent: the merchant is the one authenticated' },
    ]);
  }
  return { ...(parsed as ChargeRequestBody), merchantId };
}

function bodyError(message: string, cause?: unknown): InvalidRequestError {
  return new InvalidRequestError([{ field: 'body', message }], { cause });
}
