// chargeonce/http: the HTTP edge in front of an engine.
export { createChargeHandler } from './createChargeHandler.js';
export type { ChargeHandler, ChargeHandlerOptions } from './createChargeHandler.js';
export type { ChargeRequestBody } from './parseChargeBody.js';
