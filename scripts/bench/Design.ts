import type { ChargeRequest } from '../../src/request.js';

/** The three designs measured side by side. */
export const DESIGN_NAMES = ['engine', 'floor', 'naive'] as const;
export type DesignName = (typeof DESIGN_NAMES)[number];

/**
 * What one call came to, the same for every design, so a scenario can check it without knowing
 * how each design reports a key in use (the engine throws, the others return).
 */
export type DesignOutcome =
  | { kind: 'charged'; chargeId: string }
  | { kind: 'replayed'; chargeId: string }
  | { kind: 'inUse' }
  | { kind: 'reused' };

/** One way of charging once per key, as a scenario drives it. */
export type Design = {
  name: DesignName;
  charge(key: string, request: ChargeRequest): Promise<DesignOutcome>;
};
