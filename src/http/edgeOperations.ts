import type { ChargeEngine } from '../engine/createChargeEngine.js';
import type { ChargeBody } from './EdgeRequest.js';
import { parseChargeBody } from './parseChargeBody.js';
import { parseCaptureBody, parseRefundBody } from './parseMovementBody.js';

/**
 * The engine the edge needs: `processCharge`, and `processRefund` / `processCapture` for the
 * routes below a charge. An engine without one of those still serves the others; its route
 * answers 501 `not_implemented`.
 */
export type ChargeEdgeEngine = Pick<ChargeEngine, 'processCharge'> &
  Partial<Pick<ChargeEngine, 'processRefund' | 'processCapture'>>;

/** What the edge answers with, whichever operation ran. */
export type EdgeOutcome = { httpStatus: number; body: string; replayed: boolean };

/** Who asks and under which key; `chargeId` is the path's (empty on the charge route). */
export type EdgeCall = { key: string; merchantId: string; chargeId: string };

/** One operation the edge serves: the engine method it needs, and how a request becomes a call. */
export type EdgeOperation = {
  method: keyof ChargeEdgeEngine;
  /** What a 501 says is not served, e.g. `Refunds`. */
  served: string;
  run(engine: ChargeEdgeEngine, call: EdgeCall, body: ChargeBody): Promise<EdgeOutcome>;
};

/**
 * The operations by route. The casts hold: the edge refuses a route whose method is missing
 * (501) before it reads the body, so `run` is only called on an engine that has it.
 */
export const EDGE_OPERATIONS = {
  charge: {
    method: 'processCharge',
    served: 'Charges',
    run: (engine, call, body) =>
      engine.processCharge(call.key, parseChargeBody(body, call.merchantId)),
  },
  refund: {
    method: 'processRefund',
    served: 'Refunds',
    run: (engine, call, body) =>
      (engine.processRefund as ChargeEngine['processRefund'])(
        call.key,
        parseRefundBody(body, call),
      ),
  },
  capture: {
    method: 'processCapture',
    served: 'Captures',
    run: (engine, call, body) =>
      (engine.processCapture as ChargeEngine['processCapture'])(
        call.key,
        parseCaptureBody(body, call),
      ),
  },
} as const satisfies Record<string, EdgeOperation>;
