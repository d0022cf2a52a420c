import type { ChargeEngine } from '../engine/createChargeEngine.js';
import type { RefusedOperation } from '../engine/refusedAtEdge.js';
import type { CaptureRequest, RefundRequest } from '../engine/movementTypes.js';
import type { ChargeRequest } from '../request.js';
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
  /** The operation's own name, as its keys and metrics carry it (`charge`, `refund`, `capture`). */
  name: RefusedOperation;
  /**
   * The body as the engine method's request: apart from the call, so that a 400 of the edge's
   * own is told from one of the engine's (each is counted once, by whoever refused).
   * @throws {InvalidRequestError} naming what is wrong.
   */
  parse(call: EdgeCall, body: ChargeBody): unknown;
  /** Calls the engine with what `parse` returned. */
  run(engine: ChargeEdgeEngine, call: EdgeCall, request: unknown): Promise<EdgeOutcome>;
};

/**
 * The operations by route. The casts hold: the edge refuses a route whose method is missing
 * (501) before it reads the body, so `run` is only called on an engine that has it, with what
 * the same operation's `parse` returned.
 */
export const EDGE_OPERATIONS = {
  charge: {
    method: 'processCharge',
    served: 'Charges',
    name: 'charge',
    parse: (call, body) => parseChargeBody(body, call.merchantId),
    run: (engine, call, request) => engine.processCharge(call.key, request as ChargeRequest),
  },
  refund: {
    method: 'processRefund',
    served: 'Refunds',
    name: 'refund',
    parse: (call, body) => parseRefundBody(body, call),
    run: (engine, call, request) =>
      (engine.processRefund as ChargeEngine['processRefund'])(call.key, request as RefundRequest),
  },
  capture: {
    method: 'processCapture',
    served: 'Captures',
    name: 'capture',
    parse: (call, body) => parseCaptureBody(body, call),
    run: (engine, call, request) =>
      (engine.processCapture as ChargeEngine['processCapture'])(
        call.key,
        request as CaptureRequest,
      ),
  },
} as const satisfies Record<string, EdgeOperation>;
