import type { DesignOutcome } from './Design.js';

/**
 * The floor's claim answer: whether it claimed the key, else the key as it stands. Declared as a
 * type, not a zod schema: the floor does only what correctness needs, and checking rows is not.
 */
export type FloorClaimRow = {
  claimed: boolean;
  request_hash: string | null;
  recovery_point: string | null;
  charge_id: string | null;
  lease_held: boolean | null;
  response_status: number | null;
  response_body: string | null;
};

/** What the floor answers for a key it did not claim, from the row its claim read. */
export function answerExistingKey(row: FloorClaimRow, hash: string): DesignOutcome {
  if (row.request_hash !== hash) return { kind: 'reused' };
  // A replay returns the stored response (read by the same statement); the bench keeps its id.
  if (row.recovery_point === 'completed' && row.charge_id !== null) {
    return { kind: 'replayed', chargeId: row.charge_id };
  }
  if (row.lease_held) return { kind: 'inUse' };
  throw new Error('floor: resuming an abandoned key is not part of any scenario');
}
