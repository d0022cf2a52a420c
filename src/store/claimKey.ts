import type { CommonQueryMethods } from 'slonik';
import { rawQuery } from './rawQuery.js';
import { readKeyState } from './keyState.js';
import type { KeyState, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import type { ChargeIntent } from './chargeIntent.js';
import { findKey } from './findKey.js';
import { hotStatements } from './hotStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';
import { queryPrepared } from './hotQuery.js';

/**
 * What a new claim writes: the key at `reserved` and the local charge intent, or with
 * `reserve: false` only the key, at `started`.
 */
export type ClaimInput = ScopedKey &
  ChargeIntent & {
    reserve: boolean;
    requestHash: string;
    canonicalRequest: string;
    chargeId: string;
    lockToken: string;
    leaseMs: number;
  };

/**
 * Either this attempt now owns a fresh key, or the key already existed (with its stored canonical
 * request when the fingerprints differ, to explain the refusal), or it vanished meanwhile.
 */
export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'existing'; state: KeyState; storedRequest: string | null }
  | { kind: 'vanished' };

/** The claim's values, in the order of the claim statement's parameters. */
export function claimValues(input: ClaimInput): unknown[] {
  return [
    input.merchantId,
    input.operation,
    input.key,
    input.requestHash,
    input.canonicalRequest,
    input.reserve,
    input.chargeId,
    input.lockToken,
    input.leaseMs,
    input.customerId,
    input.amountMinor,
    input.currency,
    input.description,
    input.metadata === null ? null : JSON.stringify(input.metadata),
    input.providerKey,
    input.authorizedOnly,
  ];
}

/**
 * What the claim statement returned, as a result; null when it neither claimed nor saw the key
 * (a racing claim committed after this statement's snapshot).
 */
export function toClaimResult(row: Record<string, unknown> | undefined): ClaimResult | null {
  if (!row) return null;
  if (row.claimed === true) return { kind: 'claimed' };
  if (row.request_hash === null) return null;
  const storedRequest = row.stored_request;
  return {
    kind: 'existing',
    state: readKeyState(row),
    storedRequest: typeof storedRequest === 'string' ? storedRequest : null,
  };
}

/**
 * The claim as a named prepared statement on a node-postgres pool: the hot path of every call
 * without a `reserve` hook (a fresh charge's first round trip, a replay's only one).
 */
export function claimKeyPrepared(
  pool: PgPoolLike,
  tables: Tables,
  input: ClaimInput,
  noted?: (claim: ClaimResult | null) => void,
): Promise<ClaimResult | null> {
  // `noted` sees the result inside the `.then` the claim has anyway: group commit counts lone
  // claims too (see `claimsInFlight`) without a promise more per call.
  return queryPrepared(pool, hotStatements(tables).claim, claimValues(input)).then((rows) => {
    const claimed = toClaimResult(rows[0]);
    noted?.(claimed);
    return claimed;
  });
}

/** The claim through slonik: inside a transaction (with a `reserve` hook), or on a slonik pool. */
async function claimKeyThroughSlonik(
  db: CommonQueryMethods,
  tables: Tables,
  input: ClaimInput,
): Promise<ClaimResult | null> {
  const result = await db.query(rawQuery(hotStatements(tables).claim.text, claimValues(input)));
  return toClaimResult(result.rows[0] as Record<string, unknown> | undefined);
}

/**
 * Claims the key and reserves the charge in one statement (see `hotStatements`), so a
 * fresh charge's first phase is one round trip and one commit. The primary key is the lock: of
 * any number of racing claims exactly one inserts; the others get the winner's row back.
 * With `send` (node-postgres outside any transaction: a prepared statement, alone or in a group
 * commit) the claim goes there, and again if a racing claim hid the key; `db` is only asked if
 * that happens twice.
 */
export function claimKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ClaimInput,
  send: ((input: ClaimInput) => Promise<ClaimResult | null>) | null = null,
): Promise<ClaimResult> {
  if (!send) {
    return claimKeyThroughSlonik(db, tables, input).then(
      (claimed) => claimed ?? readAgain(db, tables, input),
    );
  }
  // The racing claim has committed by the time this one is answered: sent again, the claim reads
  // its key in a new snapshot (or inserts it, if it went away meanwhile), on node-postgres like
  // the first. Not through slonik: it keeps a connection it borrowed idle for a while, which in a
  // storm of callers from several processes (where such races are common) held the pool's
  // connections from the claims queued behind.
  return send(input).then(
    (claimed) => claimed ?? send(input).then((again) => again ?? readAgain(db, tables, input)),
  );
}

/**
 * Neither claimed nor seen: a racing claim committed after the claim's snapshot (the insert
 * waited for it, then did nothing). Reads the key again, in a new snapshot; if it is gone
 * (released by the sweeper at `started`, or a tombstone purged) the caller claims again.
 */
async function readAgain(
  db: CommonQueryMethods,
  tables: Tables,
  input: ClaimInput,
): Promise<ClaimResult> {
  const state = await findKey(db, tables, input);
  return state ? { kind: 'existing', state, storedRequest: null } : { kind: 'vanished' };
}
