// chargeonce/client: the retrying HTTP client. No database code: safe for browsers and edge runtimes.
export { createChargeClient } from './createChargeClient.js';
export type {
  ChargeClient,
  ChargeClientOptions,
  ChargeOptions,
  ChargeResult,
} from './createChargeClient.js';
export { ChargeClientError } from './ChargeClientError.js';
export { MAX_RETRY_DELAY_MS } from './retryPolicy.js';
export type {
  ChargeClientErrorCode,
  ChargeClientResponse,
  ClientOperation,
} from './ChargeClientError.js';
