import { InvalidRequestError } from '../errors.js';
import type { ChargeRequest } from '../request.js';
import type { ChargeBody } from './EdgeRequest.js';
import { parseJsonBody } from './parseJsonBody.js';

/**
 * What a client sends to the charge endpoint: a charge request without the merchant, which
 * comes from authentication and never from the body.
 */
export type ChargeRequestBody = Omit<ChargeRequest, 'merchantId'>;

/**
 * Makes the body into a request for `merchantId`. Only the shape the handler owns is checked
 * here (UTF-8, JSON, an object, no `merchantId`); the fields are the engine's to validate, so
 * the rules live in one place. A body a framework already parsed is taken as parsed: the
 * fingerprint is over the canonical request, never over the bytes.
 *
 * @throws {InvalidRequestError} naming `body`, or `merchantId` when the body carries one.
 */
export function parseChargeBody(body: ChargeBody, merchantId: string): ChargeRequest {
  const parsed = parseJsonBody(body);
  // The merchant is who authenticated. Taking one from the body, even an equal one, would
  // let a body speak for a merchant; refusing it makes a confused client fail loudly.
  if (Object.hasOwn(parsed, 'merchantId')) {
    throw new InvalidRequestError([
      { field: 'merchantId', message: 'must not be sent: the merchant is the one authenticated' },
    ]);
  }
  return { ...(parsed as ChargeRequestBody), merchantId };
}
