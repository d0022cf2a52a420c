import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { InvalidConfigurationError } from '../errors.js';
import { canonicalJson } from '../request.js';
import { wrongAmount } from './createFakeProvider.js';
import {
  createFaultSchedule,
  FAKE_SERVER_FAULTS,
  type FakeServerFault,
  type FakeServerRates,
  type FaultDraw,
  type LatencyRange,
} from './createFaultSchedule.js';
import {
  publicMovement,
  type FakeCaptureEntry,
  type FakeRefundEntry,
} from './createMovementBooks.js';
import {
  createProviderLedger,
  publicCharge,
  type FakeServerLedgerEntry,
} from './createProviderLedger.js';
import { createServerMovements, type MovementResult } from './createServerMovements.js';

/** Options of {@link startFakeProviderServer}. Every rate is in [0, 1]. */
export type FakeProviderServerOptions = {
  /**
   * The port to listen on, on 127.0.0.1.
   * @defaultValue `0` (any free port; read it from `url`)
   */
  port?: number;
  /**
   * Seed of the PRNG that draws faults and latencies: a sequential run with the same seed and
   * rates gets the same faults. Concurrent requests draw in arrival order.
   * @defaultValue a random seed, reported as `seed` on the server so a run can be replayed
   */
  seed?: number;
  /**
   * Latency added to every charge, refund and capture request and lookup, drawn uniformly from
   * [min, max] ms. The server acts after it even if the client gave up meanwhile, as a real
   * provider would: a latency past the client's timeout is one more way to move money without
   * the client knowing.
   * @defaultValue `{ min: 0, max: 0 }`
   */
  latencyMs?: LatencyRange;
  /**
   * The share of requests that get each fault. A request gets one fault at most, so the rates
   * must add up to at most 1. See {@link FakeServerFault} for what each does. Refunds and
   * captures draw from the same rates as charges: "charge" in a fault's name then means the
   * refund or the capture, and `decline` makes a new one `failed` (with `refundFailureCode` or
   * `captureFailureCode`).
   * @defaultValue all `0`
   */
  rates?: Partial<FakeServerRates>;
  /**
   * Whether lookups (`GET /v1/charges`, `/v1/refunds`, `/v1/captures`) get faults too: `hang`,
   * `errorBeforeCharge` (a 5xx) and `tooManyRequests` at their rates; the other faults do not
   * apply to a lookup.
   * @defaultValue `true`
   */
  faultLookups?: boolean;
  /**
   * How long a hung request is held before the server drops its connection. Meant to outlast
   * any client timeout; `close()` ends hung requests at once anyway.
   * @defaultValue `60_000`
   */
  hangMs?: number;
  /**
   * How long an idempotency key is remembered. Past it, a POST with the same key charges again
   * (a real double charge, as at Stripe after 24 h); only a lookup by key prevents that.
   * `0` forgets every key at once.
   * @defaultValue `Infinity`
   */
  idempotencyWindowMs?: number;
  /**
   * The decline code of declined charges.
   * @defaultValue `'card_declined'`
   */
  declineCode?: string;
  /**
   * The failure code of a refund failed by the `decline` fault.
   * @defaultValue `'expired_or_canceled_card'`
   */
  refundFailureCode?: string;
  /**
   * The failure code of a capture failed by the `decline` fault.
   * @defaultValue `'charge_expired_for_capture'`
   */
  captureFailureCode?: string;
  /**
   * The clock, in ms since the epoch: for charge times and the idempotency window.
   * @defaultValue `Date.now`
   */
  now?: () => number;
};

/** Counts of what the server saw and did, also served at `GET /v1/stats`. */
export type FakeServerStats = {
  seed: number;
  requests: {
    createCharge: number;
    findCharge: number;
    ledger: number;
    stats: number;
    /** Requests refused with a 4xx: malformed, unknown route, a key reused, an unknown charge. */
    invalid: number;
    createRefund: number;
    findRefund: number;
    capture: number;
    findCapture: number;
    /** `GET /v1/ledger/movements`. */
    movementLedger: number;
  };
  /** How many times each fault was injected, on charges, refunds, captures and lookups. */
  faults: Record<FakeServerFault, number>;
  /** Real charges made, duplicates included (the ledger's length). */
  charges: number;
  /** POSTs answered with the charge already remembered under their key. */
  replays: number;
  /** Refunds recorded, refused (`failed`) ones and duplicates included. */
  refunds: number;
  /** Refund POSTs answered with the refund already remembered under their key. */
  refundReplays: number;
  /** Captures recorded, refused (`failed`) ones and duplicates included. */
  captures: number;
  /** Capture POSTs answered with the capture already remembered under their key. */
  captureReplays: number;
  /** Outages started, and the requests refused during them. */
  outages: number;
  outageRefusals: number;
};

/** A running fake provider; talk to it over HTTP at `url`, or control it in-process. */
export type FakeProviderServer = {
  /** Base URL, `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  /** The PRNG seed in use. */
  seed: number;
  /** Copies of every real charge ever made, duplicates included, in order. */
  ledger(): FakeServerLedgerEntry[];
  /** Copies of every refund recorded, refused (`failed`) ones and duplicates included, in order. */
  refundLedger(): FakeRefundEntry[];
  /** Copies of every capture recorded, refused (`failed`) ones and duplicates included, in order. */
  captureLedger(): FakeCaptureEntry[];
  stats(): FakeServerStats;
  /**
   * Changes some rates; the others keep their values.
   * @throws {InvalidConfigurationError} a rate outside [0, 1] or a sum over 1; nothing changes.
   */
  setRates(rates: Partial<FakeServerRates>): void;
  /**
   * Queues faults for the next charge POSTs, in order, ahead of the rates.
   * @throws {InvalidConfigurationError} an unknown fault name; nothing is queued.
   */
  failNext(...faults: FakeServerFault[]): void;
  /**
   * Queues faults for the next refund POSTs, in order, ahead of the rates (`decline`: the
   * refund is `failed`).
   * @throws {InvalidConfigurationError} an unknown fault name; nothing is queued.
   */
  failNextRefund(...faults: FakeServerFault[]): void;
  /**
   * Queues faults for the next capture POSTs, in order, ahead of the rates (`decline`: the
   * capture is `failed`).
   * @throws {InvalidConfigurationError} an unknown fault name; nothing is queued.
   */
  failNextCapture(...faults: FakeServerFault[]): void;
  /**
   * Forgets every idempotency key (charges, refunds, captures) now, as if the window had passed.
   * The ledgers stay.
   */
  forgetIdempotencyKeys(): void;
  /**
   * An outage: for the next `ms`, every charge, refund, capture and lookup is answered 503
   * before anything is done.
   */
  startOutage(ms: number): void;
  /** Stops listening and ends every open connection, hung ones included. Safe to call twice. */
  close(): Promise<void>;
};

const HOST = '127.0.0.1';
const MAX_BODY_BYTES = 1_000_000;
const RETRY_AFTER_SECONDS = 1;

const chargeBodySchema = z
  .object({
    customerId: z.string().min(1).max(255),
    amountMinor: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().regex(/^[A-Z]{3}$/),
    description: z.string().max(1000).optional(),
    metadata: z.record(z.string()).optional(),
    capture: z.literal(false).optional(),
  })
  .strict();

const refundBodySchema = z
  .object({
    chargeId: z.string().min(1).max(255),
    amountMinor: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().regex(/^[A-Z]{3}$/),
    reason: z.string().max(1000).optional(),
  })
  .strict();

const captureBodySchema = z
  .object({
    amountMinor: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().regex(/^[A-Z]{3}$/),
  })
  .strict();

const CAPTURE_PATH = /^\/v1\/charges\/([^/]+)\/capture$/;

/**
 * Starts a fake payment provider over real HTTP on 127.0.0.1. It keeps its own ledger, dedupes
 * POSTs on `Idempotency-Key` within a window, and injects faults at configured rates, so that
 * worker processes can hit it over the network the way they would hit a real provider.
 *
 * API (JSON):
 * - `POST /v1/charges`, header `Idempotency-Key`, body `{ customerId, amountMinor, currency,
 *   description?, metadata?, capture?: false }` → 200 `{ id, status, amountMinor, currency,
 *   declineCode? }`. The same key within the window → the same charge; with a different body →
 *   400 `idempotency_error` and no charge (Stripe's behaviour). No key → 400. `capture: false`
 *   authorizes only: the charge is `succeeded`, and refundable once captured.
 * - `GET /v1/charges?provider_key=K` → 200 `{ charge }`, the first charge ever made under K, or
 *   `null`; searches the ledger, so it works after the window.
 * - `POST /v1/refunds`, header `Idempotency-Key`, body `{ chargeId, amountMinor, currency,
 *   reason? }` (`chargeId`: the provider's) → 200 `{ id, status, amountMinor, currency,
 *   failureCode? }`, deduplicated as charges are. A refund past what is left of the charge's
 *   capture is `failed` with `amount_too_large`. An unknown charge → 404; another currency →
 *   400.
 * - `GET /v1/refunds?provider_key=K` → 200 `{ refund }` or `{ refund: null }`.
 * - `POST /v1/charges/:id/capture`, header `Idempotency-Key`, body `{ amountMinor, currency }`
 *   → 200 `{ id, status, amountMinor, currency, failureCode? }` (`id`: the capture's own),
 *   deduplicated as charges are. Past the authorization → `failed` with `amount_too_large`; a
 *   charge already captured (at creation, or under another key) → `failed` with
 *   `already_captured`; a declined charge → `failed` with `charge_declined`.
 * - `GET /v1/captures?provider_key=K[&charge_id=C]` → 200 `{ capture }` or `{ capture: null }`.
 * - `GET /v1/ledger` → 200 `{ ledger: FakeServerLedgerEntry[] }`; `GET /v1/ledger/movements`
 *   → 200 `{ refunds, captures }`; `GET /v1/stats` → {@link FakeServerStats}. None gets latency
 *   or faults: they are for the reconciler.
 *
 * @throws {InvalidConfigurationError} for invalid options.
 */
export async function startFakeProviderServer(
  options: FakeProviderServerOptions = {},
): Promise<FakeProviderServer> {
  const settings = resolveOptions(options);
  const schedule = createFaultSchedule({
    seed: settings.seed,
    latencyMs: options.latencyMs,
    rates: options.rates,
  });
  const ledger = createProviderLedger(settings);
  const movements = createServerMovements({
    idempotencyWindowMs: settings.idempotencyWindowMs,
    now: settings.now,
    charge: (id) => ledger.byId(id),
  });
  const stats = emptyStats(settings.seed);
  // performance.now() of the end of the current outage; none yet.
  let outageUntil = -Infinity;
  const waits = createWaits();

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      // A bug in the fake must not look like a provider answer a test could misread.
      req.socket.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${HOST}`);
    const route = `${req.method ?? ''} ${url.pathname}`;
    switch (route) {
      case 'POST /v1/charges':
        stats.requests.createCharge += 1;
        return createCharge(req, res);
      case 'GET /v1/charges':
        stats.requests.findCharge += 1;
        return findCharge(url, req, res);
      case 'POST /v1/refunds':
        stats.requests.createRefund += 1;
        return createRefund(req, res);
      case 'GET /v1/refunds':
        stats.requests.findRefund += 1;
        return lookup(url, req, res, 'refund', (key) => publicOrNull(movements.findRefund(key)));
      case 'GET /v1/captures':
        stats.requests.findCapture += 1;
        return lookup(url, req, res, 'capture', (key) =>
          publicOrNull(movements.findCapture(key, url.searchParams.get('charge_id') ?? undefined)),
        );
      case 'GET /v1/ledger':
        stats.requests.ledger += 1;
        return send(res, 200, { ledger: ledger.entries() });
      case 'GET /v1/ledger/movements':
        stats.requests.movementLedger += 1;
        return send(res, 200, { refunds: movements.refunds(), captures: movements.captures() });
      case 'GET /v1/stats':
        stats.requests.stats += 1;
        return send(res, 200, snapshot());
    }
    const captured = req.method === 'POST' ? CAPTURE_PATH.exec(url.pathname) : null;
    if (captured) {
      stats.requests.capture += 1;
      return capture(decodeURIComponent(captured[1] ?? ''), req, res);
    }
    return refuse(res, 404, 'invalid_request_error', `no route ${route}`);
  }

  /** A POST's idempotency key and checked body, or null once it has been refused. */
  async function readPost<T>(
    req: IncomingMessage,
    res: ServerResponse,
    schema: z.ZodType<T>,
    what: string,
  ): Promise<{ key: string; body: T } | null> {
    const text = await readBody(req);
    if (text === null) {
      refuse(res, 413, 'invalid_request_error', 'body too large');
      return null;
    }
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
      refuse(res, 400, 'invalid_request_error', 'Idempotency-Key must be 1-255 chars');
      return null;
    }
    const body = parseBody(schema, text);
    if (!body) {
      refuse(res, 400, 'invalid_request_error', `invalid ${what} body`);
      return null;
    }
    return { key, body };
  }

  async function createCharge(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const post = await readPost(req, res, chargeBodySchema, 'charge');
    if (!post) return;
    const { key, body } = post;

    const draw = schedule.next('charge');
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;

    const result = ledger.charge(
      key,
      body,
      canonicalJson(body),
      draw.fault === 'decline',
      twisted(draw, body).amountMinor,
    );
    if (result.kind === 'keyReused') {
      return refuse(
        res,
        400,
        'idempotency_error',
        'this Idempotency-Key was used with different parameters',
      );
    }
    if (result.kind === 'replayed') stats.replays += 1;
    else stats.charges += 1;
    return answerAfterActing(draw, req, res, result.kind === 'created', publicCharge(result.entry));
  }

  async function createRefund(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const post = await readPost(req, res, refundBodySchema, 'refund');
    if (!post) return;
    const { key, body } = post;
    const draw = schedule.next('refund');
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;
    const result = movements.refund(
      key,
      twisted(draw, body),
      canonicalJson(body),
      draw.fault === 'decline' ? { failWith: settings.refundFailureCode } : {},
    );
    if (refuseMovement(res, result)) return;
    if (result.kind === 'replayed') stats.refundReplays += 1;
    else stats.refunds += 1;
    return answerAfterActing(
      draw,
      req,
      res,
      result.kind === 'created',
      publicMovement(result.entry),
    );
  }

  async function capture(
    chargeId: string,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<void> {
    const post = await readPost(req, res, captureBodySchema, 'capture');
    if (!post) return;
    const { key, body } = post;
    const draw = schedule.next('capture');
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;
    const result = movements.capture(
      key,
      chargeId,
      twisted(draw, body),
      // The charge is part of what the key was used for: the same key on another charge is a
      // reused key.
      canonicalJson({ chargeId, ...body }),
      draw.fault === 'decline' ? { failWith: settings.captureFailureCode } : {},
    );
    if (refuseMovement(res, result)) return;
    if (result.kind === 'replayed') stats.captureReplays += 1;
    else stats.captures += 1;
    return answerAfterActing(
      draw,
      req,
      res,
      result.kind === 'created',
      publicMovement(result.entry),
    );
  }

  /**
   * The body with another amount under `wrongAmount`. The caller keeps the request's own
   * fingerprint, so a retry of the request still dedupes.
   */
  function twisted<T extends { amountMinor: number }>(draw: FaultDraw, body: T): T {
    return draw.fault === 'wrongAmount'
      ? { ...body, amountMinor: wrongAmount(body.amountMinor) }
      : body;
  }

  /** Answers a refund or capture that was not done (a reused key, an invalid request). */
  function refuseMovement<E>(
    res: ServerResponse,
    result: MovementResult<E>,
  ): result is Extract<MovementResult<E>, { kind: 'keyReused' | 'invalid' }> {
    if (result.kind === 'keyReused') {
      refuse(
        res,
        400,
        'idempotency_error',
        'this Idempotency-Key was used with different parameters',
      );
      return true;
    }
    if (result.kind === 'invalid') {
      refuse(res, result.status, 'invalid_request_error', result.message);
      return true;
    }
    return false;
  }

  /**
   * Injects the faults that happen once the request was acted on (or replayed), then answers
   * `view`. `created`: this request did it, so a `decline` or `wrongAmount` took effect.
   */
  function answerAfterActing(
    draw: FaultDraw,
    req: IncomingMessage,
    res: ServerResponse,
    created: boolean,
    view: object,
  ): void {
    if (draw.fault === 'decline' && created) stats.faults.decline += 1;
    if (draw.fault === 'errorAfterCharge') {
      stats.faults.errorAfterCharge += 1;
      return refuse(res, draw.errorStatus, 'api_error', 'injected error after charging');
    }
    if (draw.fault === 'resetAfterCharge') {
      stats.faults.resetAfterCharge += 1;
      // A TCP reset with no answer: the client cannot tell whether the charge happened.
      req.socket.resetAndDestroy();
      return;
    }
    if (draw.fault === 'wrongAmount' && created) stats.faults.wrongAmount += 1;
    if (draw.fault === 'malformed') {
      stats.faults.malformed += 1;
      return send(res, 200, { ...view, status: 'ok' });
    }
    return send(res, 200, view);
  }

  async function findCharge(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    return lookup(url, req, res, 'charge', (key) => {
      const found = ledger.find(key);
      return found ? publicCharge(found) : null;
    });
  }

  /** A lookup by `provider_key`: answers `{ [name]: found }`, after its faults. */
  async function lookup(
    url: URL,
    req: IncomingMessage,
    res: ServerResponse,
    name: 'charge' | 'refund' | 'capture',
    find: (providerKey: string) => object | null,
  ): Promise<void> {
    const key = url.searchParams.get('provider_key');
    if (!key) return refuse(res, 400, 'invalid_request_error', 'provider_key is required');
    const drawn = schedule.next('lookup');
    const draw = settings.faultLookups ? drawn : { ...drawn, fault: null };
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;
    return send(res, 200, { [name]: find(key) });
  }

  /** During an outage every charge and lookup is answered 503, before anything is done. */
  function refuseDuringOutage(res: ServerResponse): boolean {
    if (performance.now() >= outageUntil) return false;
    stats.outageRefusals += 1;
    refuse(res, 503, 'api_error', 'provider outage');
    return true;
  }

  /** Injects the faults that happen before anything is charged; true if one did. */
  function injectBeforeCharge(draw: FaultDraw, req: IncomingMessage, res: ServerResponse): boolean {
    switch (draw.fault) {
      case 'hang':
        stats.faults.hang += 1;
        waits.hold(req, res, settings.hangMs);
        return true;
      case 'errorBeforeCharge':
        stats.faults.errorBeforeCharge += 1;
        refuse(res, draw.errorStatus, 'api_error', 'injected error before charging');
        return true;
      case 'tooManyRequests':
        stats.faults.tooManyRequests += 1;
        refuse(res, 429, 'rate_limit_error', 'injected rate limit', {
          'retry-after': String(RETRY_AFTER_SECONDS),
        });
        return true;
      case 'errorAfterCharge':
      case 'resetAfterCharge':
      case 'decline':
      case 'wrongAmount':
      case 'malformed':
      case null:
        return false;
    }
  }

  function refuse(
    res: ServerResponse,
    status: number,
    type: string,
    message: string,
    headers: Record<string, string> = {},
  ): void {
    if (status < 500 && status !== 429) stats.requests.invalid += 1;
    send(res, status, { error: { type, message } }, headers);
  }

  function snapshot(): FakeServerStats {
    return structuredClone(stats);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${HOST}:${port}`,
    seed: settings.seed,
    ledger: () => ledger.entries(),
    refundLedger: () => movements.refunds(),
    captureLedger: () => movements.captures(),
    stats: snapshot,
    setRates: (rates) => schedule.setRates(rates),
    failNext: (...faults) => schedule.failNext(faults, 'charge'),
    failNextRefund: (...faults) => schedule.failNext(faults, 'refund'),
    failNextCapture: (...faults) => schedule.failNext(faults, 'capture'),
    forgetIdempotencyKeys: () => {
      ledger.forget();
      movements.forget();
    },
    startOutage: (ms) => {
      outageUntil = Math.max(outageUntil, performance.now() + ms);
      stats.outages += 1;
    },
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        waits.cancelAll();
        server.close(() => resolve());
        // close() alone waits for busy connections, and a hung request never stops being busy.
        server.closeAllConnections();
      })),
  };
}

type Settings = {
  port: number;
  seed: number;
  faultLookups: boolean;
  hangMs: number;
  idempotencyWindowMs: number;
  declineCode: string;
  refundFailureCode: string;
  captureFailureCode: string;
  now: () => number;
};

function resolveOptions(options: FakeProviderServerOptions): Settings {
  const settings: Settings = {
    port: options.port ?? 0,
    seed: options.seed ?? Math.floor(Math.random() * 2 ** 32),
    faultLookups: options.faultLookups ?? true,
    hangMs: options.hangMs ?? 60_000,
    idempotencyWindowMs: options.idempotencyWindowMs ?? Infinity,
    declineCode: options.declineCode ?? 'card_declined',
    refundFailureCode: options.refundFailureCode ?? 'expired_or_canceled_card',
    captureFailureCode: options.captureFailureCode ?? 'charge_expired_for_capture',
    now: options.now ?? Date.now,
  };
  if (!(Number.isInteger(settings.port) && settings.port >= 0 && settings.port <= 65_535)) {
    throw new InvalidConfigurationError(`port must be an integer in [0, 65535]`);
  }
  if (!Number.isFinite(settings.seed)) {
    throw new InvalidConfigurationError('seed must be a finite number');
  }
  if (!(Number.isFinite(settings.hangMs) && settings.hangMs >= 0)) {
    throw new InvalidConfigurationError('hangMs must be a non-negative finite number');
  }
  if (!(settings.idempotencyWindowMs >= 0)) {
    throw new InvalidConfigurationError('idempotencyWindowMs must be >= 0 (or Infinity)');
  }
  return settings;
}

function emptyStats(seed: number): FakeServerStats {
  const faults = Object.fromEntries(FAKE_SERVER_FAULTS.map((fault) => [fault, 0]));
  return {
    seed,
    requests: {
      createCharge: 0,
      findCharge: 0,
      ledger: 0,
      stats: 0,
      invalid: 0,
      createRefund: 0,
      findRefund: 0,
      capture: 0,
      findCapture: 0,
      movementLedger: 0,
    },
    faults: faults as Record<FakeServerFault, number>,
    charges: 0,
    replays: 0,
    refunds: 0,
    refundReplays: 0,
    captures: 0,
    captureReplays: 0,
    outages: 0,
    outageRefusals: 0,
  };
}

function publicOrNull(entry: FakeRefundEntry | FakeCaptureEntry | undefined): object | null {
  return entry === undefined ? null : publicMovement(entry);
}

function parseBody<T>(schema: z.ZodType<T>, text: string): T | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = schema.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/** The request body as text, or null past {@link MAX_BODY_BYTES}. */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  // The client may have gone (it timed out during the latency): nothing to answer then.
  if (res.destroyed || res.socket?.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * The server's timers: latencies and hung requests. All of them end on `cancelAll()`, so a closed
 * server leaves nothing behind to keep the process alive.
 */
function createWaits() {
  const timers = new Map<NodeJS.Timeout, () => void>();
  let cancelled = false;
  const track = (ms: number, onDone: () => void, onCancel: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      onDone();
    }, ms);
    timers.set(timer, onCancel);
    return timer;
  };
  return {
    /** Resolves true after `ms`, or false if the server closed meanwhile. */
    wait(ms: number): Promise<boolean> {
      if (cancelled) return Promise.resolve(false);
      if (ms <= 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        track(
          ms,
          () => resolve(true),
          () => resolve(false),
        );
      });
    },
    /** Holds a request unanswered; drops its connection after `ms` unless the client left. */
    hold(req: IncomingMessage, res: ServerResponse, ms: number): void {
      const timer = track(
        ms,
        () => req.socket.resetAndDestroy(),
        () => req.socket.destroy(),
      );
      res.once('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
      });
    },
    cancelAll(): void {
      cancelled = true;
      for (const [timer, onCancel] of timers) {
        clearTimeout(timer);
        onCancel();
      }
      timers.clear();
    },
  };
}
