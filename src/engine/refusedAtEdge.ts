/** The operations the HTTP edge serves, by the name their keys and metrics carry. */
export type RefusedOperation = 'charge' | 'refund' | 'capture';

/**
 * Where an engine takes note of a request the HTTP edge refused as invalid (400) before asking
 * it: the edge's refusals (no key header, a body that is not JSON) are counted with the
 * engine's own in `chargeonce.invalid_requests`. A registered symbol, not a module's: an engine
 * and an edge loaded from two copies of the package (ESM and CommonJS) still find each other.
 */
export const REFUSED_AT_EDGE: unique symbol = Symbol.for('chargeonce.refusedAtEdge');

/** What an engine keeps under {@link REFUSED_AT_EDGE}. */
export type RefusalCounter = (operation: RefusedOperation) => void;

/** Tells `engine` that the edge refused a request of `operation` as invalid, if it listens. */
export function noteRefusedAtEdge(engine: object, operation: RefusedOperation): void {
  const counter = (engine as { [REFUSED_AT_EDGE]?: unknown })[REFUSED_AT_EDGE];
  if (typeof counter === 'function') (counter as RefusalCounter)(operation);
}
