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
  createProviderLedger,
  publicCharge,
  type ChargeBody,
  type FakeServerLedgerEntry,
} from './createProviderLedger.js';

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
   * Latency added to every `/v1/charges` request, drawn uniformly from [min, max] ms. The server
   * charges after it even if the client gave up meanwhile, as a real provider would: a latency
   * past the client's timeout is one more way to charge without the client knowing.
   * @defaultValue `{ min: 0, max: 0 }`
   */
  latencyMs?: LatencyRange;
  /**
   * The share of requests that get each fault. A request gets one fault at most, so the rates
   * must add up to at most 1. See {@link FakeServerFault} for what each does.
   * @defaultValue all `0`
   */
  rates?: Partial<FakeServerRates>;
  /**
   * Whether lookups (`GET /v1/charges`) get faults too: `hang`, `errorBeforeCharge` (a 5xx) and
   * `tooManyRequests` at their rates; the other faults do not apply to a lookup.
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
    /** Requests refused with a 4xx: malformed, unknown route, or a key reused. */
    invalid: number;
  };
  /** How many times each fault was injected. */
  faults: Record<FakeServerFault, number>;
  /** Real charges made, duplicates included (the ledger's length). */
  charges: number;
  /** POSTs answered with the charge already remembered under their key. */
  replays: number;
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
  stats(): FakeServerStats;
  /**
   * Changes some rates; the others keep their values.
   * @throws {InvalidConfigurationError} a rate outside [0, 1] or a sum over 1; nothing changes.
   */
  setRates(rates: Partial<FakeServerRates>): void;
  /**
   * Queues faults for the next POSTs, in order, ahead of the rates.
   * @throws {InvalidConfigurationError} an unknown fault name; nothing is queued.
   */
  failNext(...faults: FakeServerFault[]): void;
  /** Forgets every idempotency key now, as if the window had passed. The ledger stays. */
  forgetIdempotencyKeys(): void;
  /**
   * An outage: for the next `ms`, every charge and lookup is answered 503 before anything is
   * charged or looked up.
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
  })
  .strict();

/**
 * Starts a fake payment provider over real HTTP on 127.0.0.1. It keeps its own ledger, dedupes
 * POSTs on `Idempotency-Key` within a window, and injects faults at configured rates, so that
 * worker processes can hit it over the network the way they would hit a real provider.
 *
 * API (JSON):
 * - `POST /v1/charges`, header `Idempotency-Key`, body `{ customerId, amountMinor, currency,
 *   description?, metadata? }` → 200 `{ id, status, amountMinor, currency, declineCode? }`.
 *   The same key within the window → the same charge; with a different body → 400
 *   `idempotency_error` and no charge (Stripe's behaviour). No key → 400.
 * - `GET /v1/charges?provider_key=K` → 200 `{ charge }`, the first charge ever made under K, or
 *   `null`; searches the ledger, so it works after the window.
 * - `GET /v1/ledger` → 200 `{ ledger: FakeServerLedgerEntry[] }`; `GET /v1/stats` →
 *   {@link FakeServerStats}. Neither gets latency or faults: they are for the reconciler.
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
      case 'GET /v1/ledger':
        stats.requests.ledger += 1;
        return send(res, 200, { ledger: ledger.entries() });
      case 'GET /v1/stats':
        stats.requests.stats += 1;
        return send(res, 200, snapshot());
      default:
        return refuse(res, 404, 'invalid_request_error', `no route ${route}`);
    }
  }

  async function createCharge(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    if (text === null) return refuse(res, 413, 'invalid_request_error', 'body too large');
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length < 1 || key.length > 255) {
      return refuse(res, 400, 'invalid_request_error', 'Idempotency-Key must be 1-255 chars');
    }
    const body = parseChargeBody(text);
    if (!body) return refuse(res, 400, 'invalid_request_error', 'invalid charge body');

    const draw = schedule.next('charge');
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;

    // A wrong amount is charged under the request's own fingerprint: a retry still dedupes.
    const charged =
      draw.fault === 'wrongAmount' ? { ...body, amountMinor: wrongAmount(body.amountMinor) } : body;
    const result = ledger.charge(key, charged, canonicalJson(body), draw.fault === 'decline');
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
    if (draw.fault === 'decline' && result.kind === 'created') stats.faults.decline += 1;

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
    if (draw.fault === 'wrongAmount' && result.kind === 'created') stats.faults.wrongAmount += 1;
    if (draw.fault === 'malformed') {
      stats.faults.malformed += 1;
      return send(res, 200, { ...publicCharge(result.entry), status: 'ok' });
    }
    return send(res, 200, publicCharge(result.entry));
  }

  async function findCharge(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = url.searchParams.get('provider_key');
    if (!key) return refuse(res, 400, 'invalid_request_error', 'provider_key is required');
    const drawn = schedule.next('lookup');
    const draw = settings.faultLookups ? drawn : { ...drawn, fault: null };
    if (!(await waits.wait(draw.latencyMs))) return;
    if (refuseDuringOutage(res) || injectBeforeCharge(draw, req, res)) return;
    const found = ledger.find(key);
    return send(res, 200, { charge: found ? publicCharge(found) : null });
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
    stats: snapshot,
    setRates: (rates) => schedule.setRates(rates),
    failNext: (...faults) => schedule.failNext(faults),
    forgetIdempotencyKeys: () => ledger.forget(),
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
    requests: { createCharge: 0, findCharge: 0, ledger: 0, stats: 0, invalid: 0 },
    faults: faults as Record<FakeServerFault, number>,
    charges: 0,
    replays: 0,
    outages: 0,
    outageRefusals: 0,
  };
}

function parseChargeBody(text: string): ChargeBody | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = chargeBodySchema.safeParse(json);
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
