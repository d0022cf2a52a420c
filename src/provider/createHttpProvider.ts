import { z } from 'zod';
import { InvalidConfigurationError } from '../errors.js';
import {
  ProviderTransientError,
  type CaptureInput,
  type CreateChargeInput,
  type CreateRefundInput,
  type FindCaptureInput,
  type PaymentProvider,
  type ProviderCallOptions,
  type ProviderCapture,
  type ProviderCharge,
  type ProviderRefund,
} from './PaymentProvider.js';

/*
 * An adapter for the fake provider server's HTTP API, and the template for a real one: to write
 * an adapter for your provider, keep the shape (one `send` per call, the error mapping, a schema
 * check of every 200) and change the paths, the request body and the schemas. The mapping is the
 * part chargeonce relies on: whatever may go differently next time (timeout, reset, 5xx, 429) must
 * be a `ProviderTransientError`, and anything else a plain error.
 */

/** Options of {@link createHttpProvider}. */
export type HttpProviderOptions = {
  /** Base URL of the provider's API, e.g. `FakeProviderServer.url`. A path prefix is kept. */
  baseUrl: string;
  /**
   * The fetch to use.
   * @defaultValue `globalThis.fetch`
   */
  fetch?: typeof globalThis.fetch;
  /**
   * Headers sent with every request, such as `Authorization`.
   * @defaultValue none
   */
  headers?: Record<string, string>;
};

/**
 * The provider answered something that is no use and will not change on a retry: a 4xx other
 * than 429, a redirect, or a 200 whose body is not what the API promises. A bug or a
 * misconfiguration, so it is deliberately not a `ProviderTransientError`. Also the `cause` of a
 * transient 5xx or 429, to keep its status and body for logs.
 */
export class ProviderHttpError extends Error {
  /** The HTTP status the provider answered with. */
  readonly status: number;
  /** The response body, as text. */
  readonly body: string;
  /** `Retry-After` in milliseconds, when the provider sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    details: { status: number; body: string; retryAfterMs?: number | undefined },
    options?: { cause?: unknown },
  ) {
    super(message, { cause: options?.cause });
    this.name = 'ProviderHttpError';
    this.status = details.status;
    this.body = details.body;
    this.retryAfterMs = details.retryAfterMs;
  }
}

const chargeSchema = z.object({
  id: z.string().min(1),
  status: z.enum(['succeeded', 'declined']),
  amountMinor: z.number().int().positive(),
  currency: z.string().min(1),
  declineCode: z.string().nullish(),
});

const lookupSchema = z.object({ charge: chargeSchema.nullable() });

/** A refund or a capture: the two have the same shape on the wire. */
const movementSchema = z.object({
  id: z.string().min(1),
  status: z.enum(['succeeded', 'failed']),
  amountMinor: z.number().int().positive(),
  currency: z.string().min(1),
  failureCode: z.string().nullish(),
});

const refundLookupSchema = z.object({ refund: movementSchema.nullable() });
const captureLookupSchema = z.object({ capture: movementSchema.nullable() });

/** A provider that can also refund and capture, as `createHttpProvider`'s can. */
export type HttpProvider = PaymentProvider &
  Required<Pick<PaymentProvider, 'createRefund' | 'findRefund' | 'capture' | 'findCapture'>>;

/** Connection dropped mid-exchange: the request may or may not have been processed. */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET']);
/** Undici's own deadlines, for a caller who configured them on the dispatcher. */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * Creates a `PaymentProvider` that talks to the fake provider server's API (see
 * `startFakeProviderServer`) with `fetch`: charges (`capture: false` authorizes only), refunds
 * and captures, and their lookups.
 *
 * Every method throws `ProviderTransientError` with reason `timeout` (the signal aborted),
 * `reset` (the connection dropped), `network` (no connection, or another fetch failure),
 * `http_5xx` or `http_429`; and `ProviderHttpError` for any other answer that is not a valid 200
 * (a reused key, an unknown charge). A refund or capture the provider refused is not an error:
 * it comes back `failed`, with its `failureCode`.
 *
 * @throws {InvalidConfigurationError} `baseUrl` is not an http(s) URL.
 */
export function createHttpProvider(options: HttpProviderOptions): HttpProvider {
  const baseUrl = parseBaseUrl(options.baseUrl);
  const fetchFn = options.fetch ?? globalThis.fetch;
  const headers = { accept: 'application/json', ...options.headers };

  /** One request: an answered 2xx comes back parsed; everything else throws, mapped. */
  async function send(path: string, init: RequestInit, signal: AbortSignal): Promise<unknown> {
    let status: number;
    let text: string;
    let retryAfter: string | null;
    try {
      // No redirects: a payment API that redirects a POST is misconfigured, not transient.
      const response = await fetchFn(`${baseUrl}${path}`, { ...init, signal, redirect: 'manual' });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      // Read inside the try: the connection can still drop, or the deadline pass, mid-body.
      text = await response.text();
    } catch (error) {
      throw mapFetchFailure(error, signal);
    }
    const details = { status, body: text, retryAfterMs: parseRetryAfter(retryAfter) };
    // The provider's Retry-After travels with the error: the engine hands it to its caller.
    const retryAfterMs =
      details.retryAfterMs === undefined ? {} : { retryAfterMs: details.retryAfterMs };
    if (status === 429) {
      throw new ProviderTransientError('http_429', {
        cause: new ProviderHttpError(`provider answered 429`, details),
        ...retryAfterMs,
      });
    }
    if (status >= 500) {
      throw new ProviderTransientError('http_5xx', {
        cause: new ProviderHttpError(`provider answered ${status}`, details),
        ...retryAfterMs,
      });
    }
    if (status < 200 || status > 299) {
      throw new ProviderHttpError(`provider answered ${status}: ${text.slice(0, 500)}`, details);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new ProviderHttpError(
        `provider answered ${status} with a body that is not JSON`,
        details,
        {
          cause: error,
        },
      );
    }
  }

  /** Checks a 2xx body against the API's schema: a malformed answer must not be recorded. */
  function validate<T>(schema: z.ZodType<T>, json: unknown, path: string): T {
    const parsed = schema.safeParse(json);
    if (parsed.success) return parsed.data;
    throw new ProviderHttpError(
      `provider answered ${path} with an unexpected body: ${parsed.error.message}`,
      { status: 200, body: JSON.stringify(json) },
      { cause: parsed.error },
    );
  }

  /** A POST that moves money, under the operation's idempotency key. */
  function post(
    path: string,
    providerKey: string,
    body: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<unknown> {
    return send(
      path,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          // The provider dedupes on this: the same value on every retry of one operation.
          'idempotency-key': providerKey,
        },
        body: JSON.stringify(body),
      },
      signal,
    );
  }

  return {
    async createCharge(input: CreateChargeInput, opts: ProviderCallOptions) {
      const body = {
        customerId: input.customerId,
        amountMinor: input.amountMinor,
        currency: input.currency,
        description: input.description,
        metadata: input.metadata,
        // Absent unless false: a charge captured at once sends the body it always sent.
        capture: input.capture === false ? false : undefined,
      };
      const json = await post('/v1/charges', input.providerKey, body, opts.signal);
      return toProviderCharge(validate(chargeSchema, json, 'POST /v1/charges'));
    },
    async findCharge(providerKey: string, opts: ProviderCallOptions) {
      const path = `/v1/charges?provider_key=${encodeURIComponent(providerKey)}`;
      const json = await send(path, { method: 'GET', headers }, opts.signal);
      const { charge } = validate(lookupSchema, json, 'GET /v1/charges');
      return charge ? toProviderCharge(charge) : null;
    },
    async createRefund(input: CreateRefundInput, opts: ProviderCallOptions) {
      const body = {
        chargeId: input.providerChargeId,
        amountMinor: input.amountMinor,
        currency: input.currency,
        reason: input.reason,
      };
      const json = await post('/v1/refunds', input.providerKey, body, opts.signal);
      return toMovement(validate(movementSchema, json, 'POST /v1/refunds'));
    },
    async findRefund(providerKey: string, opts: ProviderCallOptions) {
      const path = `/v1/refunds?provider_key=${encodeURIComponent(providerKey)}`;
      const json = await send(path, { method: 'GET', headers }, opts.signal);
      const { refund } = validate(refundLookupSchema, json, 'GET /v1/refunds');
      return refund ? toMovement(refund) : null;
    },
    async capture(input: CaptureInput, opts: ProviderCallOptions) {
      const path = `/v1/charges/${encodeURIComponent(input.providerChargeId)}/capture`;
      const body = { amountMinor: input.amountMinor, currency: input.currency };
      const json = await post(path, input.providerKey, body, opts.signal);
      return toMovement(validate(movementSchema, json, 'POST /v1/charges/:id/capture'));
    },
    async findCapture(input: FindCaptureInput, opts: ProviderCallOptions) {
      const query = new URLSearchParams({
        provider_key: input.providerKey,
        charge_id: input.providerChargeId,
      });
      const json = await send(
        `/v1/captures?${query.toString()}`,
        { method: 'GET', headers },
        opts.signal,
      );
      const { capture } = validate(captureLookupSchema, json, 'GET /v1/captures');
      return capture ? toMovement(capture) : null;
    },
  };
}

function toMovement(movement: z.infer<typeof movementSchema>): ProviderRefund & ProviderCapture {
  return {
    id: movement.id,
    status: movement.status,
    amountMinor: movement.amountMinor,
    currency: movement.currency,
    ...(movement.failureCode == null ? {} : { failureCode: movement.failureCode }),
  };
}

function toProviderCharge(charge: z.infer<typeof chargeSchema>): ProviderCharge {
  return {
    id: charge.id,
    status: charge.status,
    amountMinor: charge.amountMinor,
    currency: charge.currency,
    ...(charge.declineCode == null ? {} : { declineCode: charge.declineCode }),
  };
}

/**
 * Maps a failed fetch. Whether the provider acted on the request is unknown in every transient
 * case here; chargeonce resolves that with `findCharge` on the retry, so "transient" is safe to
 * say even when the request did land.
 */
function mapFetchFailure(error: unknown, signal: AbortSignal): unknown {
  // Checked first: an abort can surface as an AbortError, the signal's reason, or a socket error
  // from the connection it tore down.
  if (signal.aborted) {
    return new ProviderTransientError('timeout', { cause: signal.reason ?? error });
  }
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'AbortError' || name === 'TimeoutError') {
    return new ProviderTransientError('timeout', { cause: error });
  }
  const codes = errorCodes(error);
  if (codes.some((code) => TIMEOUT_CODES.has(code))) {
    return new ProviderTransientError('timeout', { cause: error });
  }
  if (codes.some((code) => RESET_CODES.has(code)) || hasMessage(error, 'socket hang up')) {
    return new ProviderTransientError('reset', { cause: error });
  }
  // fetch reports every failure on the wire as a TypeError ("fetch failed", or "terminated" when
  // the body stream breaks), with the reason in `cause`: refused, unreachable, DNS, TLS, ….
  if (error instanceof TypeError && isFetchFailure(error)) {
    return new ProviderTransientError('network', { cause: error });
  }
  return error;
}

/** The `code`s along an error's `cause` chain (undici nests the socket error one level down). */
function errorCodes(error: unknown): string[] {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
}

function hasMessage(error: unknown, text: string): boolean {
  return error instanceof Error && error.message.includes(text);
}

function isFetchFailure(error: TypeError): boolean {
  return error.message === 'fetch failed' || error.message === 'terminated';
}

/** `Retry-After` is either seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const seconds = Number(value);
  if (value.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function parseBaseUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new InvalidConfigurationError(`baseUrl is not a URL: ${String(baseUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidConfigurationError(`baseUrl must be http(s), got ${url.protocol}`);
  }
  // Paths are appended, so `https://host/provider` keeps its prefix.
  return url.toString().replace(/\/+$/, '');
}
