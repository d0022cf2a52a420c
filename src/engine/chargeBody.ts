import type { ChargeRequest } from '../request.js';
import type { ChargeStatus } from './types.js';

/**
 * HTTP statuses of terminal outcomes. A cancelled charge is 410 Gone: that operation is over and
 * was never charged; a new attempt needs a new key.
 */
export const HTTP_STATUS = { succeeded: 201, declined: 402, cancelled: 410 } as const;

/**
 * The response body of a charge, as JSON text. Built once, stored as text and replayed as is:
 * the first answer and every replay are the same bytes.
 */
export function chargeBody(fields: {
  chargeId: string;
  status: ChargeStatus;
  request: ChargeRequest;
  providerChargeId: string | null;
  declineCode: string | null;
}): string {
  const { request } = fields;
  return JSON.stringify({
    id: fields.chargeId,
    object: 'charge',
    status: fields.status,
    merchantId: request.merchantId,
    customerId: request.customerId,
    amountMinor: request.amountMinor,
    currency: request.currency,
    description: request.description ?? null,
    metadata: request.metadata ?? {},
    providerChargeId: fields.providerChargeId,
    declineCode: fields.declineCode,
    // Only an authorization says so: the body of a charge captured at once is unchanged.
    ...(request.capture === false ? { captured: false } : {}),
    created: new Date().toISOString(),
  });
}
