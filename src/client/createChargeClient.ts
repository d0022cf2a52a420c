import { InvalidRequestError } from '../errors.js';
import type { ChargeRequestBody } from '../http/parseChargeBody.js';
import type { CaptureRequestBody, RefundRequestBody } from '../http/parseMovementBody.js';
import { resolveClientOptions, type ChargeClientOptions } from './resolveClientOptions.js';
import { runOperation, type ChargeOptions, type ChargeResult } from './runOperation.js';

export type { ChargeClientOptions } from './resolveClientOptions.js';
export type { ChargeOptions, ChargeResult } from './runOperation.js';

/** A client of the charge handler that retries safely. */
export type ChargeClient = {
  /**
   * Runs one charge operation: one key for all its attempts, so retries never charge twice.
   * Retries whatever `fetch` throws (no answer came: a network error, in any runtime's or
   * custom fetch's words), timeouts, 408, 409, 429, 502, 503 and 504, with exponential
   * backoff and full jitter, waiting at least what `Retry-After` asks (but never more than
   * `MAX_RETRY_DELAY_MS`, 60 s: a longer ask ends the operation); never anything else, nor
   * an answer whose code says a retry cannot change it (`provider_answer_invalid`).
   * Resolves with a 2xx or a 402 (a decline is an answer, not a failure).
   *
   * @throws {InvalidRequestError} the key is not 1–255 printable ASCII; nothing was sent.
   * @throws {InvalidConfigurationError} `retries` or `maxElapsedMs` is out of range; nothing
   * was sent.
   * @throws {ChargeClientError} refused, out of retries, or aborted; it carries the key and the
   * last response, so the same operation can be resumed later.
   * @throws what your `headers` function threw, unretried (a bug of the caller's, the same on
   * every attempt).
   */
  charge(request: ChargeRequestBody, options?: ChargeOptions): Promise<ChargeResult>;
  /**
   * Refunds part or all of a charge: `POST {charge route}/{chargeId}/refunds`, one key for all
   * its attempts, retried as `charge` is. Resolves with 201 (refunded) or 402 (the provider
   * refused it). A refusal by chargeonce (422 with `refusal` in the body: `exceeds_refundable`,
   * `charge_not_captured`, …) and a cancelled refund (410) are stored outcomes a retry cannot
   * change: `ChargeClientError` `charge_refused`, the body in `error.response`.
   *
   * @throws {InvalidRequestError} the key, or `chargeId` (1–255 characters, not `.` or `..`),
   * is invalid; nothing was sent.
   * @throws {InvalidConfigurationError} as `charge`.
   * @throws {ChargeClientError} as `charge`, with `operation: 'refund'`.
   * @throws what your `headers` function threw, as `charge`.
   */
  refund(
    chargeId: string,
    request: RefundRequestBody,
    options?: ChargeOptions,
  ): Promise<ChargeResult>;
  /**
   * Captures a charge made with `capture: false`: `POST {charge route}/{chargeId}/capture`, all
   * of it unless `amountMinor` says less. Resolves and throws as `refund` does (`refusal`
   * `charge_not_capturable`, `exceeds_authorized`, …), with `operation: 'capture'`.
   *
   * @throws {InvalidRequestError} the key or `chargeId` is invalid; nothing was sent.
   * @throws {InvalidConfigurationError} as `charge`.
   * @throws {ChargeClientError} as `charge`, with `operation: 'capture'`.
   * @throws what your `headers` function threw, as `charge`.
   */
  capture(
    chargeId: string,
    request?: CaptureRequestBody,
    options?: ChargeOptions,
  ): Promise<ChargeResult>;
};

/**
 * Creates a retrying client for the charge handler.
 *
 * @throws {InvalidConfigurationError} for a `baseUrl` that is not an absolute http(s) URL or
 * carries credentials (the message never quotes them), a numeric option that is negative, not
 * finite or past its bound, or a header fetch would refuse.
 */
export function createChargeClient(options: ChargeClientOptions): ChargeClient {
  const config = resolveClientOptions(options);

  return {
    charge: (request, callOptions = {}) =>
      runOperation(config, {
        operation: 'charge',
        url: config.url,
        request,
        options: callOptions,
      }),
    refund: async (chargeId, request, callOptions = {}) =>
      runOperation(config, {
        operation: 'refund',
        url: belowCharge(config.url, chargeId, 'refunds'),
        request,
        options: callOptions,
      }),
    capture: async (chargeId, request = {}, callOptions = {}) =>
      runOperation(config, {
        operation: 'capture',
        url: belowCharge(config.url, chargeId, 'capture'),
        request,
        options: callOptions,
      }),
  };
}

/**
 * `{charge route}/{chargeId}/{action}`, the id percent-encoded as one path segment.
 * @throws {InvalidRequestError} for an id no path can carry, or the server would refuse.
 */
function belowCharge(chargeRoute: URL, chargeId: unknown, action: string): URL {
  // `.` and `..` are dot segments, resolved away by every URL parser, escaped or not.
  if (
    typeof chargeId !== 'string' ||
    chargeId.length === 0 ||
    chargeId.length > 255 ||
    chargeId === '.' ||
    chargeId === '..'
  ) {
    throw new InvalidRequestError([
      { field: 'chargeId', message: 'must be 1-255 characters, and neither "." nor ".."' },
    ]);
  }
  const url = new URL(chargeRoute);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${encodeURIComponent(chargeId)}/${action}`;
  return url;
}
