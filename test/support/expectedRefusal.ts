import type { StoredCharge } from './readStoreBooks.js';

/** A refund or capture as asked: `amountMinor` null is a capture of all that was authorized. */
export type AskedMovement = { kind: 'refund' | 'capture'; amountMinor: number | null };

/**
 * Why a refund or capture must be refused, given its charge's row as it stood just before the
 * claim and nothing else running on it: null when it must be let through to the provider.
 * Written from the rules a provider keeps (refunds within what was captured, counting those
 * still in doubt; one capture of an authorization, within it), not from the engine's SQL.
 */
export function expectedRefusal(charge: StoredCharge | null, asked: AskedMovement): string | null {
  if (!charge) return 'charge_not_found';
  if (charge.status !== 'succeeded') return 'charge_not_succeeded';
  if (asked.kind === 'refund') {
    if (charge.authorizedOnly && charge.capturedMinor === null) return 'charge_not_captured';
    const captured = charge.authorizedOnly ? (charge.capturedMinor ?? 0) : charge.amountMinor;
    const asking = asked.amountMinor ?? 0;
    return charge.refundedMinor + charge.refundReservedMinor + asking > captured
      ? 'exceeds_refundable'
      : null;
  }
  if (
    !charge.authorizedOnly ||
    charge.capturedMinor !== null ||
    charge.captureReservedMinor !== null
  ) {
    return 'charge_not_capturable';
  }
  return (asked.amountMinor ?? charge.amountMinor) > charge.amountMinor
    ? 'exceeds_authorized'
    : null;
}
