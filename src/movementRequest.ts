import { z } from 'zod';
import type { CaptureRequest, RefundRequest } from './engine/movementTypes.js';
import { exactId, validateKeyedRequest } from './request.js';
import { storable, UNSTORABLE_MESSAGE } from './requestRules.js';

/** A validated refund or capture request, with its canonical text and fingerprint. */
export type ValidatedMovement<T> = {
  key: string;
  request: T;
  canonical: string;
  fingerprint: string;
};

// chargeonce's charge ids are UUIDs: anything else cannot name one of its charges.
const chargeId = z
  .string()
  .regex(
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    "must be a chargeonce charge id (a lower-case UUID, the charge's `chargeId`)",
  );

const amountMinor = z
  .number()
  .int('must be an integer')
  .positive('must be positive')
  .max(Number.MAX_SAFE_INTEGER, 'must be a safe integer');

const refundSchema = z
  .object({
    merchantId: exactId,
    chargeId,
    amountMinor,
    reason: z
      .string()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .refine(storable, UNSTORABLE_MESSAGE)
      .optional(),
  })
  .strict()
  .transform(({ reason, ...required }): RefundRequest => ({
    ...required,
    ...(reason === undefined ? {} : { reason }),
  }));

const captureSchema = z
  .object({ merchantId: exactId, chargeId, amountMinor: amountMinor.optional() })
  .strict()
  .transform(({ amountMinor: amount, ...required }): CaptureRequest => ({
    ...required,
    ...(amount === undefined ? {} : { amountMinor: amount }),
  }));

/**
 * Validates a refund request and its key before anything is written.
 * @throws {InvalidRequestError} naming every invalid field.
 */
export function validateRefundRequest(
  key: unknown,
  request: unknown,
): ValidatedMovement<RefundRequest> {
  return validateKeyedRequest(refundSchema, key, request);
}

/**
 * Validates a capture request and its key before anything is written.
 * @throws {InvalidRequestError} naming every invalid field.
 */
export function validateCaptureRequest(
  key: unknown,
  request: unknown,
): ValidatedMovement<CaptureRequest> {
  return validateKeyedRequest(captureSchema, key, request);
}
