import type { ChargeRequest } from '../../src/request.js';

/** The merchant every benchmark charge belongs to. */
export const BENCH_MERCHANT = 'm_bench';

/** A realistic request, with a description and metadata, varied by `i`. */
export function benchRequest(i: number): ChargeRequest {
  return {
    merchantId: BENCH_MERCHANT,
    customerId: `c_${i % 1_000}`,
    amountMinor: 1_000 + (i % 5_000),
    currency: 'NGN',
    description: `Order ${i}`,
    metadata: { order: String(i) },
  };
}
