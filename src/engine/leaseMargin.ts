/**
 * The default `leaseMarginMs`: half of what the lease leaves beyond the provider budget, a second
 * at most. An attempt calls the provider only while its lease outlasts the budget plus this.
 */
export function defaultLeaseMarginMs(leaseMs: number, providerTimeoutMs: number): number {
  return Math.min(1_000, Math.floor((leaseMs - providerTimeoutMs) / 2));
}
