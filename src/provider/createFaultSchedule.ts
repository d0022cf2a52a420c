import { InvalidConfigurationError } from '../errors.js';
import { seededRandom } from './seededRandom.js';

/** Every fault the fake provider server can inject, in the order their rates are laid out. */
export const FAKE_SERVER_FAULTS = [
  'hang',
  'errorBeforeCharge',
  'errorAfterCharge',
  'resetAfterCharge',
  'tooManyRequests',
  'decline',
  'wrongAmount',
  'malformed',
] as const;

/**
 * A fault of the fake provider server.
 *
 * - `hang`: holds the request without answering and without charging, until the client gives up
 *   (or `hangMs` passes and the server drops the connection).
 * - `errorBeforeCharge`: answers 500, 502 or 503 without charging.
 * - `errorAfterCharge`: charges, then answers 500, 502 or 503 (the ambiguous case).
 * - `resetAfterCharge`: charges, then resets the connection without answering (ambiguous too).
 * - `tooManyRequests`: answers 429 with `Retry-After`, without charging.
 * - `decline`: a new charge is declined (a real answer, not a failure).
 * - `wrongAmount`: charges another amount than asked (a buggy integration) and answers truthfully.
 * - `malformed`: charges as asked, then answers with a charge whose `status` is not one the
 *   port knows.
 */
export type FakeServerFault = (typeof FAKE_SERVER_FAULTS)[number];

/** The share of requests that get each fault, each in [0, 1], together at most 1. */
export type FakeServerRates = Record<FakeServerFault, number>;

/** Bounds of the latency added to each provider request, drawn uniformly. */
export type LatencyRange = { min: number; max: number };

/** What one request gets. */
export type FaultDraw = {
  fault: FakeServerFault | null;
  latencyMs: number;
  /** The status a 5xx fault answers with. */
  errorStatus: 500 | 502 | 503;
};

/** Faults that make sense on a lookup: nothing is charged there, so none "after charge". */
const LOOKUP_FAULTS: ReadonlySet<FakeServerFault> = new Set([
  'hang',
  'errorBeforeCharge',
  'tooManyRequests',
]);

const ERROR_STATUSES = [500, 502, 503] as const;

/** What a request does: a POST that moves money (each with its own queue), or a lookup. */
export type RequestKind = MovingKind | 'lookup';
/** The POSTs that move money; each has a queue of faults of its own. */
export type MovingKind = 'charge' | 'refund' | 'capture';

/** Decides, request by request, which fault (if any) is injected and how long it waits. */
export type FaultSchedule = {
  /**
   * The draw for the next request. A fault queued for its kind comes first; a lookup gets only
   * the faults that make sense without moving money.
   */
  next(kind: RequestKind): FaultDraw;
  setRates(partial: Partial<FakeServerRates>): void;
  /** Queues faults for the next requests of `kind` (charges when absent). */
  failNext(faults: readonly FakeServerFault[], kind?: MovingKind): void;
  rates(): FakeServerRates;
};

/**
 * Creates a fault schedule. Every request draws exactly three numbers from the seeded PRNG
 * (fault, latency, error status), whatever it gets: so a queued fault or a changed rate shifts
 * no later draw, and a sequential run with one seed replays the same faults.
 *
 * @throws {InvalidConfigurationError} a rate outside [0, 1], rates summing over 1, or a bad
 * latency range.
 */
export function createFaultSchedule(options: {
  seed: number;
  rates?: Partial<FakeServerRates>;
  latencyMs?: LatencyRange;
}): FaultSchedule {
  const random = seededRandom(options.seed);
  const latency = options.latencyMs ?? { min: 0, max: 0 };
  validateLatency(latency);
  let rates = validateRates({ ...zeroRates(), ...options.rates });
  const queued: Record<MovingKind, FakeServerFault[]> = { charge: [], refund: [], capture: [] };

  return {
    next(kind) {
      const faultDraw = random();
      const latencyDraw = random();
      const statusDraw = random();
      const picked = pick(rates, faultDraw);
      const fault = kind === 'lookup' ? lookupFault(picked) : (queued[kind].shift() ?? picked);
      return {
        fault,
        latencyMs: Math.round(latency.min + latencyDraw * (latency.max - latency.min)),
        errorStatus: ERROR_STATUSES[Math.floor(statusDraw * ERROR_STATUSES.length)] ?? 503,
      };
    },
    setRates(partial) {
      // Validated as a whole before it replaces anything: a bad call changes nothing.
      rates = validateRates({ ...rates, ...partial });
    },
    failNext(faults, kind = 'charge') {
      for (const fault of faults) {
        if (!FAKE_SERVER_FAULTS.includes(fault)) {
          throw new InvalidConfigurationError(`unknown fault ${JSON.stringify(fault)}`);
        }
      }
      queued[kind].push(...faults);
    },
    rates: () => ({ ...rates }),
  };
}

/** Lays the rates end to end on [0, 1) and returns the fault whose stretch `draw` falls in. */
function pick(rates: FakeServerRates, draw: number): FakeServerFault | null {
  let edge = 0;
  for (const fault of FAKE_SERVER_FAULTS) {
    edge += rates[fault];
    if (draw < edge) return fault;
  }
  return null;
}

function lookupFault(fault: FakeServerFault | null): FakeServerFault | null {
  return fault !== null && LOOKUP_FAULTS.has(fault) ? fault : null;
}

function zeroRates(): FakeServerRates {
  return Object.fromEntries(FAKE_SERVER_FAULTS.map((f) => [f, 0])) as FakeServerRates;
}

function validateRates(rates: Record<string, unknown>): FakeServerRates {
  let sum = 0;
  for (const name of Object.keys(rates)) {
    if (!(FAKE_SERVER_FAULTS as readonly string[]).includes(name)) {
      throw new InvalidConfigurationError(`unknown fault rate ${JSON.stringify(name)}`);
    }
  }
  for (const fault of FAKE_SERVER_FAULTS) {
    const rate = rates[fault];
    if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) {
      throw new InvalidConfigurationError(
        `rates.${fault} must be a number in [0, 1], got ${String(rate)}`,
      );
    }
    sum += rate;
  }
  // A tiny tolerance: rates like 0.1 + 0.2 + 0.7 do not add up to exactly 1 in floating point.
  if (sum > 1 + 1e-9) {
    throw new InvalidConfigurationError(
      `fault rates must add up to at most 1 (each request gets one fault at most), got ${sum}`,
    );
  }
  return rates as FakeServerRates;
}

function validateLatency(latency: LatencyRange): void {
  const { min, max } = latency;
  if (!(Number.isFinite(min) && Number.isFinite(max) && min >= 0 && min <= max)) {
    throw new InvalidConfigurationError(
      `latencyMs must have 0 <= min <= max, both finite, got ${JSON.stringify(latency)}`,
    );
  }
}
