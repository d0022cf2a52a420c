// chargeonce/http: the HTTP edge in front of an engine, for node's http (Express), the Fetch
// API (Hono, Next.js, Bun, Deno) and Fastify.
export { createChargeHandler } from './createChargeHandler.js';
export type { ChargeHandler, ChargeHandlerOptions } from './createChargeHandler.js';
export { createFetchHandler } from './createFetchHandler.js';
export type { FetchHandler, FetchHandlerOptions } from './createFetchHandler.js';
export { chargeOnceFastify } from './chargeOnceFastify.js';
export type {
  ChargeOnceFastifyOptions,
  FastifyReplyLike,
  FastifyRequestLike,
  FastifyScopeLike,
} from './chargeOnceFastify.js';
export type { AuthenticatedMerchant, ChargeEdgeOptions } from './edgeOptions.js';
export type { ChargeEdgeEngine } from './chargeEdge.js';
export type { ChargeRequestBody } from './parseChargeBody.js';
export type { CaptureRequestBody, RefundRequestBody } from './parseMovementBody.js';
