import { createHash } from 'node:crypto';
import type { ChargeRequest } from '../../src/request.js';

/**
 * The canonical request and its sha256, as the floor and the naive design store them. Fields go in
 * a fixed order and metadata is sorted, so equal requests give equal text without a generic
 * canonicaliser: the least work that still makes the fingerprint check correct.
 */
export function fingerprintRequest(request: ChargeRequest): { canonical: string; hash: string } {
  const metadata = request.metadata
    ? Object.fromEntries(
        Object.entries(request.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      )
    : undefined;
  const canonical = JSON.stringify({
    amountMinor: request.amountMinor,
    currency: request.currency,
    customerId: request.customerId,
    description: request.description,
    merchantId: request.merchantId,
    metadata,
  });
  return { canonical, hash: createHash('sha256').update(canonical).digest('hex') };
}
