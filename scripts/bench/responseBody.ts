import type { ProviderCharge } from '../../src/provider/PaymentProvider.js';
import type { ChargeRequest } from '../../src/request.js';

/** The stored response of the floor and the naive design: the same fields the engine stores. */
export function responseBody(
  chargeId: string,
  request: ChargeRequest,
  charge: ProviderCharge,
): string {
  return JSON.stringify({
    id: chargeId,
    object: 'charge',
    status: charge.status,
    merchantId: request.merchantId,
    customerId: request.customerId,
    amountMinor: request.amountMinor,
    currency: request.currency,
    description: request.description ?? null,
    metadata: request.metadata ?? {},
    providerChargeId: charge.id,
    declineCode: charge.declineCode ?? null,
    created: new Date().toISOString(),
  });
}
