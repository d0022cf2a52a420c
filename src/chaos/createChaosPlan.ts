import { seededRandom } from '../provider/seededRandom.js';
import type { ChargeRequest } from '../request.js';
import { chaosOperation, mixSeed } from './chaosOperation.js';

/** A charge of a chaos run: a key and the request sent, on every retry, under it. */
export type PlannedCharge = {
  kind: 'charge';
  index: number;
  key: string;
  merchantId: string;
  request: ChargeRequest;
};

/**
 * A refund or capture of a chaos run, on the charge of operation `parent`. Its request is known
 * but for the charge's id, which only the charge's outcome tells. Movements of one `wave` are
 * sent together, racing on the charge; a wave starts once the one before has ended (captures,
 * then refunds of what they captured).
 */
export type PlannedMovement = {
  kind: 'refund' | 'capture';
  index: number;
  key: string;
  merchantId: string;
  parent: number;
  wave: number;
  /** A capture without it captures the whole authorization. */
  amountMinor: number | undefined;
  reason: string | undefined;
};

export type PlannedOperation = PlannedCharge | PlannedMovement;

/** The operations of a run: a charge, and maybe refunds and captures of it, make a family. */
export type ChaosPlan = {
  size: number;
  operation(index: number): PlannedOperation;
  /** The index of the charge an operation belongs to (its own, for a charge). */
  familyOf(index: number): number;
  /** Operations planned, by kind. */
  counts: { charges: number; refunds: number; captures: number };
};

/** How a plan is drawn: the same settings give the same plan, in every process. */
export type ChaosPlanSettings = {
  runId: string;
  seed: number;
  /** Operations in all, movements included. */
  operations: number;
  /** The share of operations that are refunds or captures, in [0, 0.9]. */
  movementRate: number;
};

/** The plan's own stream of the seed (two parts: no single operation's stream can equal it). */
const PLAN_STREAM = [0x706c616e, 1] as const;
/** Movements in a family that has any: at least this many at most, so that keys race. */
const MIN_LARGEST_FAMILY = 4;
/** Of the families with movements, the share that authorize first and capture. */
const AUTHORIZE_SHARE = 0.5;
/** Of the families without movements, authorizations nobody ever captures. */
const NEVER_CAPTURED_SHARE = 0.05;
const REASONS = ['requested_by_customer', 'duplicate', 'fraudulent'] as const;

/**
 * Draws the plan of a run. Each charge's request is {@link chaosOperation}'s; a family with
 * movements is either a captured charge with refunds racing on it, or an authorization with one
 * or two captures racing on it (all of it, a part, or now and then more than authorized), then
 * refunds. Refund amounts are drawn so that together they often exceed what is refundable, so
 * refusals happen as well as successes. A pure function of the settings: a restarted worker
 * rebuilds exactly the plan its killed predecessor ran.
 */
export function createChaosPlan(settings: ChaosPlanSettings): ChaosPlan {
  const random = seededRandom(mixSeed(settings.seed, ...PLAN_STREAM));
  const operations: PlannedOperation[] = [];
  const family: number[] = [];
  const counts = { charges: 0, refunds: 0, captures: 0 };
  const r = settings.movementRate;
  // Movements per charge on average, r / (1 - r), as families of 1..largest movements.
  const perCharge = r / (1 - r);
  const largest = Math.max(MIN_LARGEST_FAMILY, Math.ceil(2 * perCharge) - 1);
  const withMovements = Math.min(1, perCharge / ((largest + 1) / 2));

  while (operations.length < settings.operations) {
    const parent = operations.length;
    const base = chaosOperation(settings.runId, settings.seed, parent);
    const room = settings.operations - parent - 1;
    const moves = room > 0 && random() < withMovements ? 1 + Math.floor(random() * largest) : 0;
    const size = Math.min(moves, room);
    // Without movements the run is the charges-only one it always was.
    const neverCaptured = r > 0 ? NEVER_CAPTURED_SHARE : 0;
    const authorizeOnly = random() < (size > 0 ? AUTHORIZE_SHARE : neverCaptured);
    const request: ChargeRequest = authorizeOnly
      ? { ...base.request, capture: false }
      : base.request;
    const amount = request.amountMinor;
    const add = (op: PlannedOperation) => {
      operations.push(op);
      family.push(parent);
      counts[op.kind === 'charge' ? 'charges' : op.kind === 'refund' ? 'refunds' : 'captures'] += 1;
    };
    add({ kind: 'charge', index: parent, key: base.key, merchantId: request.merchantId, request });
    const captures = authorizeOnly && size > 0 ? (size > 1 && random() < 0.35 ? 2 : 1) : 0;
    for (let m = 0; m < size; m++) {
      const index = operations.length;
      const kind = m < captures ? 'capture' : 'refund';
      add({
        kind,
        index,
        key: `op-${index}`,
        merchantId: request.merchantId,
        parent,
        wave: kind === 'capture' ? 0 : 1,
        amountMinor:
          kind === 'capture' ? captureAmount(amount, random) : refundAmount(amount, random),
        reason: kind === 'refund' && random() < 0.5 ? pick(REASONS, random) : undefined,
      });
    }
  }

  return {
    size: operations.length,
    operation: (index) => {
      const op = operations[index];
      if (!op) throw new RangeError(`no operation ${index} in a plan of ${operations.length}`);
      return op;
    },
    familyOf: (index) => family[index] ?? index,
    counts,
  };
}

/** All of it (no amount), a part, or now and then more than was authorized (a refusal). */
function captureAmount(authorized: number, random: () => number): number | undefined {
  const draw = random();
  if (draw < 0.4) return undefined;
  if (draw < 0.92) return Math.max(1, Math.floor(authorized * (0.3 + 0.7 * random())));
  return authorized + 1 + Math.floor(random() * 100);
}

/** Mostly 10–45 % of the charge, sometimes all of it: three or more together often exceed it. */
function refundAmount(charged: number, random: () => number): number {
  if (random() < 0.08) return charged;
  return Math.max(1, Math.round(charged * (0.1 + 0.35 * random())));
}

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)] as T;
}
