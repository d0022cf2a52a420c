import { chargeBody } from '../../src/engine/chargeBody.js';
import type { ProviderCharge } from '../../src/provider/PaymentProvider.js';
import type { ChargeRequest } from '../../src/request.js';

/** The stored response of the floor and the naive design: the very body the engine stores. */
export function responseBody(
  chargeId: string,
  request: ChargeRequest,
  charge: ProviderCharge,
): string {
  return chargeBody({
    chargeId,
    status: charge.status,
    request,
    providerChargeId: charge.id,
    declineCode: charge.declineCode ?? null,
  });
}
