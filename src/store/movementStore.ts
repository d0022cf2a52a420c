import { sql, type CommonQueryMethods } from 'slonik';
import {
  flag,
  integer,
  nullable,
  oneOf,
  RECOVERY_POINTS,
  text,
  type RecoveryPoint,
  type Row,
  type ScopedKey,
} from './keyState.js';
import { movementOfAnotherOperation } from './movementOwner.js';
import { movementStatements } from './movementStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';
import { rawQuery } from './rawQuery.js';
import type { Tables } from './tables.js';
import { takeOverCtes } from './takeOverKey.js';

export const MOVEMENT_KINDS = ['refund', 'capture'] as const;
/** What a movement does to its charge. */
export type MovementKind = (typeof MOVEMENT_KINDS)[number];

const MOVEMENT_STATUSES = ['reserved', 'succeeded', 'failed', 'refused', 'cancelled'] as const;
/** A movement's status as stored. */
export type StoredMovementStatus = (typeof MOVEMENT_STATUSES)[number];

/** A movement this attempt holds the key of, as the claim or a takeover left it. */
export type HeldMovement = {
  /** `reserved`: the amount is held on the charge; `refused`: nothing held, nothing to ask. */
  status: 'reserved' | 'refused';
  refusal: string | null;
  /** Null only for a refusal of an unknown charge. */
  amountMinor: number | null;
  currency: string | null;
  providerChargeId: string | null;
};

/** An existing movement key, as the claim read it. */
export type MovementKeyState = {
  requestHash: string;
  recoveryPoint: RecoveryPoint;
  movementId: string;
  leaseHeld: boolean;
  leaseRemainingMs: number;
  attempts: number;
  responseStatus: number | null;
  responseBody: string | null;
  movementStatus: StoredMovementStatus | null;
  providerMovementId: string | null;
};

/** What the claim of a refund or capture writes. */
export type MovementClaimInput = ScopedKey & {
  requestHash: string;
  canonicalRequest: string;
  movementId: string;
  lockToken: string;
  leaseMs: number;
  kind: MovementKind;
  chargeId: string;
  amountMinor: number | null;
  reason: string | null;
  providerKey: string;
  /**
   * The engine's operation: a charge made under another is not found (its provider is another's),
   * unless it predates the column (null: any engine's).
   */
  chargeOperation: string;
};

export type MovementClaim =
  | { kind: 'claimed'; movement: HeldMovement }
  | { kind: 'existing'; state: MovementKeyState; storedRequest: string | null }
  | { kind: 'vanished' };

/** The outcome a completion stores. */
export type MovementCompletion = ScopedKey & {
  lockToken: string;
  status: 'succeeded' | 'failed' | 'refused' | 'cancelled';
  providerMovementId: string | null;
  failureCode: string | null;
  responseStatus: number;
  responseBody: string;
  /** What the provider captured (a succeeded capture), else null. */
  capturedMinor: number | null;
  /** Why a reserved movement ends `refused` (a `reserve` hook's rejection); else absent. */
  refusal?: string | null;
};

/** Either way to PostgreSQL: a node-postgres pool (prepared statements) or slonik. */
export type MovementDb = { pg: PgPoolLike | null; slonik: CommonQueryMethods };

async function send(db: MovementDb, statement: { name: string; text: string }, values: unknown[]) {
  if (db.pg) {
    const query = { name: statement.name, text: statement.text, values };
    return (await db.pg.query(query)).rows[0];
  }
  return (await db.slonik.query(rawQuery(statement.text, values))).rows[0] as Row | undefined;
}

/**
 * Claims a refund or capture key and reserves the movement against its charge, in one statement
 * (see `movementStatements`), or reads the existing key. A claim that raced a key committed after
 * its snapshot reads the key again.
 */
export async function claimMovement(
  db: MovementDb,
  tables: Tables,
  input: MovementClaimInput,
): Promise<MovementClaim> {
  const row = await send(db, movementStatements(tables).claim, [
    input.merchantId,
    input.operation,
    input.key,
    input.requestHash,
    input.canonicalRequest,
    input.movementId,
    input.lockToken,
    input.leaseMs,
    input.kind,
    input.chargeId,
    input.amountMinor,
    input.reason,
    input.providerKey,
    input.chargeOperation,
  ]);
  if (row?.claimed === true) {
    return {
      kind: 'claimed',
      movement: {
        status: oneOf(row, 'new_status', ['reserved', 'refused'] as const),
        refusal: nullable(row, 'new_refusal', text),
        amountMinor: nullable(row, 'new_amount_minor', minor),
        currency: nullable(row, 'new_currency', text),
        providerChargeId: nullable(row, 'new_provider_charge_id', text),
      },
    };
  }
  if (row && row.request_hash !== null) {
    const stored = row.stored_request;
    return {
      kind: 'existing',
      state: readMovementKeyState(row),
      storedRequest: typeof stored === 'string' ? stored : null,
    };
  }
  const state = await findMovementKey(db.slonik, tables, input);
  return state ? { kind: 'existing', state, storedRequest: null } : { kind: 'vanished' };
}

/** Stores the outcome and ends the movement, fenced; false when the lease was lost. */
export async function completeMovement(
  db: MovementDb,
  tables: Tables,
  input: MovementCompletion,
): Promise<boolean> {
  const row = await send(db, movementStatements(tables).complete, completionValues(input));
  return row?.completed === true;
}

/** The completion as a slonik query: inside a transaction (the injected crash before COMMIT). */
export function completeMovementQuery(tables: Tables, input: MovementCompletion) {
  return rawQuery(movementStatements(tables).complete.text, completionValues(input));
}

function completionValues(input: MovementCompletion): unknown[] {
  return [
    input.merchantId,
    input.operation,
    input.key,
    input.lockToken,
    input.status,
    input.providerMovementId,
    input.failureCode,
    input.responseStatus,
    input.responseBody,
    input.capturedMinor,
    input.refusal ?? null,
  ];
}

/** A movement key this attempt took over, and its movement. */
export type TakenMovement = {
  movementId: string;
  attempts: number;
  movement: HeldMovement;
  providerKey: string;
  /** When the movement was reserved, and how long ago, by PostgreSQL's clock. */
  reservation: { at: Date; ageMs: number };
};

/**
 * Takes over an unfinished movement key whose lease ran out or was released, with a new lock
 * token; null when another attempt took it first or it completed meanwhile, and when its
 * movement is of a charge made under another operation than `chargeOperation`: that engine's
 * provider made the movement, and its retries and sweepers finish it (a retry sent here is
 * answered 409 once its races run out).
 */
export async function takeOverMovement(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey & { requestHash: string; lockToken: string; leaseMs: number },
  chargeOperation: string,
): Promise<TakenMovement | null> {
  const ownCharge = sql.fragment`NOT ${movementOfAnotherOperation(tables, chargeOperation)}`;
  const result = await db.query(sql.unsafe`
    WITH ${takeOverCtes(tables, scoped, ownCharge)}
    SELECT t.charge_id::text AS movement_id, t.attempts, ${heldColumns}
    FROM taken t
    JOIN ${tables.movements} m ON m.merchant_id = t.merchant_id AND m.id = t.charge_id
  `);
  const row = result.rows[0] as Row | undefined;
  return row ? toTaken(row) : null;
}

/** The movement of a key the sweeper picked (it holds the lease already). */
export async function readHeldMovement(
  db: CommonQueryMethods,
  tables: Tables,
  ref: { merchantId: string; movementId: string; attempts: number },
): Promise<TakenMovement | null> {
  const result = await db.query(sql.unsafe`
    SELECT m.id::text AS movement_id, ${ref.attempts}::int4 AS attempts, ${heldColumns}
    FROM ${tables.movements} m
    WHERE m.merchant_id = ${ref.merchantId} AND m.id = ${ref.movementId}::uuid
  `);
  const row = result.rows[0] as Row | undefined;
  return row ? toTaken(row) : null;
}

const heldColumns = sql.fragment`
  m.status, m.refusal, m.amount_minor::float8 AS amount_minor, m.currency,
  m.provider_charge_id, m.provider_key,
  (extract(epoch FROM m.created_at) * 1000)::float8 AS reserved_at_ms,
  (extract(epoch FROM now() - m.created_at) * 1000)::float8 AS reservation_age_ms`;

function toTaken(row: Row): TakenMovement | null {
  const status = oneOf(row, 'status', MOVEMENT_STATUSES);
  // Only a movement still reserved (or refused, its refusal not yet stored) has work left.
  if (status !== 'reserved' && status !== 'refused') return null;
  return {
    movementId: text(row, 'movement_id'),
    attempts: integer(row, 'attempts'),
    movement: {
      status,
      refusal: nullable(row, 'refusal', text),
      amountMinor: nullable(row, 'amount_minor', minor),
      currency: nullable(row, 'currency', text),
      providerChargeId: nullable(row, 'provider_charge_id', text),
    },
    providerKey: text(row, 'provider_key'),
    reservation: {
      at: new Date(minor(row, 'reserved_at_ms')),
      ageMs: minor(row, 'reservation_age_ms'),
    },
  };
}

async function findMovementKey(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey,
): Promise<MovementKeyState | null> {
  const result = await db.query(sql.unsafe`
    SELECT k.request_hash, k.recovery_point, k.charge_id::text AS charge_id,
      (k.lock_token IS NOT NULL AND k.locked_until > now()) AS lease_held,
      GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::int4
        AS lease_remaining_ms,
      k.attempts, k.response_status, k.response_body, m.status AS movement_status,
      m.provider_movement_id
    FROM ${tables.keys} k
    LEFT JOIN ${tables.movements} m ON m.merchant_id = k.merchant_id AND m.id = k.charge_id
    WHERE k.merchant_id = ${scoped.merchantId} AND k.operation = ${scoped.operation}
      AND k.key = ${scoped.key}
  `);
  const row = result.rows[0] as Row | undefined;
  return row ? readMovementKeyState(row) : null;
}

function readMovementKeyState(row: Row): MovementKeyState {
  return {
    requestHash: text(row, 'request_hash'),
    recoveryPoint: oneOf(row, 'recovery_point', RECOVERY_POINTS),
    movementId: text(row, 'charge_id'),
    leaseHeld: flag(row, 'lease_held'),
    leaseRemainingMs: integer(row, 'lease_remaining_ms'),
    attempts: integer(row, 'attempts'),
    responseStatus: nullable(row, 'response_status', integer),
    responseBody: nullable(row, 'response_body', text),
    movementStatus: nullable(row, 'movement_status', (r, c) => oneOf(r, c, MOVEMENT_STATUSES)),
    providerMovementId: nullable(row, 'provider_movement_id', text),
  };
}

/** An amount, sent as float8 (exact to 2^53, beyond any amount) but read whatever the driver made of it. */
function minor(row: Row, column: string): number {
  const value = row[column];
  const n = typeof value === 'string' || typeof value === 'bigint' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    throw new Error(`chargeonce: column ${column} should be a number, got ${typeof value}`);
  }
  return n;
}
