import type { KeyState } from '../store/keyState.js';
import type { ChargeOutcome, ChargeStatus } from './types.js';

/** The stored outcome of a completed key, as a replay. */
export function replayOf(state: KeyState): ChargeOutcome {
  if (state.responseStatus === null || state.responseBody === null) {
    // The schema's CHECK constraint makes this unreachable for a completed key.
    throw new Error('A completed key has no stored response.');
  }
  return {
    status: replayStatus(state),
    httpStatus: state.responseStatus,
    body: state.responseBody,
    replayed: true,
    chargeId: state.chargeId,
    providerChargeId: state.providerChargeId,
  };
}

function replayStatus(state: KeyState): ChargeStatus {
  switch (state.chargeStatus) {
    case 'succeeded':
    case 'declined':
    case 'rejected':
    case 'cancelled':
      return state.chargeStatus;
    case 'reserved':
    case null:
      // A completed key always has a final charge; fall back on the stored status code.
      return state.responseStatus === 201 ? 'succeeded' : 'declined';
  }
}

/** How long a caller should wait before retrying a key another attempt holds. */
export function retryAfterForLease(leaseRemainingMs: number): number {
  return Math.max(50, Math.min(leaseRemainingMs, 1_000));
}
