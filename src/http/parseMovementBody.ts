import type { CaptureRequest, RefundRequest } from '../engine/movementTypes.js';
import { InvalidRequestError, type FieldIssue } from '../errors.js';
import {
  validateCaptureRequest,
  validateRefundRequest,
  type ValidatedMovement,
} from '../movementRequest.js';
import { MAX_REPORTED_ISSUES } from '../request.js';
import type { ChargeBody } from './EdgeRequest.js';
import { parseJsonBody } from './parseJsonBody.js';

/**
 * What a client sends to `POST …/charges/{chargeId}/refunds`: a refund request without the
 * merchant (authentication says it) or the charge (the path says it).
 */
export type RefundRequestBody = Omit<RefundRequest, 'merchantId' | 'chargeId'>;

/**
 * What a client sends to `POST …/charges/{chargeId}/capture`: `{}` (or no body at all) captures
 * everything authorized.
 */
export type CaptureRequestBody = Omit<CaptureRequest, 'merchantId' | 'chargeId'>;

/** Who asks, for which charge, under which key: none of it from the body. */
export type MovementScope = { key: string; merchantId: string; chargeId: string };

/** Fields the body must not carry, and why: each is said by something the client cannot forge. */
const NOT_FROM_THE_BODY: ReadonlyMap<string, string> = new Map([
  ['merchantId', 'must not be sent: the merchant is the one authenticated'],
  ['chargeId', 'must not be sent: the charge is the one in the path'],
]);

/**
 * Makes the body into a refund request and validates it with the rules `processRefund` applies
 * (the same words), so a bad refund is refused here whatever engine stands behind the edge.
 *
 * @throws {InvalidRequestError} naming every bad field, the path's `chargeId` included.
 */
export function parseRefundBody(body: ChargeBody, scope: MovementScope): RefundRequest {
  return parseMovement(parseJsonBody(body), scope, validateRefundRequest);
}

/**
 * As {@link parseRefundBody}, for a capture; a body of no bytes is `{}` (capture it all).
 * @throws {InvalidRequestError} naming every bad field, the path's `chargeId` included.
 */
export function parseCaptureBody(body: ChargeBody, scope: MovementScope): CaptureRequest {
  return parseMovement(parseJsonBody(body, {}), scope, validateCaptureRequest);
}

function parseMovement<T>(
  fields: Record<string, unknown>,
  scope: MovementScope,
  validate: (key: unknown, request: unknown) => ValidatedMovement<T>,
): T {
  const issues: FieldIssue[] = [];
  for (const [name, message] of NOT_FROM_THE_BODY) {
    if (Object.hasOwn(fields, name)) issues.push({ field: name, message });
  }
  // fromEntries, not assignment: a `__proto__` field stays a field (and is refused as unknown).
  const rest = Object.fromEntries(
    Object.entries(fields).filter(([name]) => !NOT_FROM_THE_BODY.has(name)),
  );
  try {
    const validated = validate(scope.key, {
      ...rest,
      merchantId: scope.merchantId,
      chargeId: scope.chargeId,
    });
    if (issues.length === 0) return validated.request;
  } catch (error) {
    if (!(error instanceof InvalidRequestError)) throw error;
    issues.push(...error.issues);
  }
  throw new InvalidRequestError(issues.slice(0, MAX_REPORTED_ISSUES));
}

/**
 * The charge id a path segment names, percent-decoded, with what is wrong with it: checked
 * before the body is read, so a request for no charge costs no upload. Whether it names one of
 * chargeonce's charges (a UUID) is for the body's validation to say.
 */
export function chargeIdOfSegment(segment: string): { chargeId: string; issues: FieldIssue[] } {
  let chargeId: string;
  try {
    chargeId = decodeURIComponent(segment);
  } catch {
    return {
      chargeId: segment,
      issues: [{ field: 'chargeId', message: 'must be percent-encoded UTF-8' }],
    };
  }
  const message =
    chargeId.length === 0
      ? 'must not be empty'
      : chargeId.length > 255
        ? 'must be at most 255 characters'
        : undefined;
  return { chargeId, issues: message === undefined ? [] : [{ field: 'chargeId', message }] };
}
