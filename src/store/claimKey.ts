import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import { keyStateRow, toKeyState } from './keyState.js';
import type { KeyState, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import type { ChargeIntent } from './chargeIntent.js';
import { findKey } from './findKey.js';

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

/** Either this attempt now owns a fresh key, or the key already existed. */
export type ClaimResult =
  { kind: 'claimed' } | { kind: 'existing'; state: KeyState } | { kind: 'vanished' };

// `claimed`, and the existing key's columns (null when claimed).
const claimRow = z.object({ claimed: z.boolean() }).passthrough();

/**
 * Claims the key and reserves the charge in one statement (`claim_key`, see the migration), so a
 * fresh charge's first phase is one round trip and one commit. The primary key is the lock: of
 * any number of racing claims exactly one inserts; the others get the winner's row back.
 */
export async function claimKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ClaimInput,
): Promise<ClaimResult> {
  const row = await db.maybeOne(sql.type(claimRow)`
    SELECT * FROM ${tables.claimKeyFunction}(
      ${input.merchantId}::text, ${input.operation}::text, ${input.key}::text,
      ${input.requestHash}::text, ${input.canonicalRequest}::text, ${input.reserve}::boolean,
      ${input.chargeId}::uuid, ${input.lockToken}::uuid, ${input.leaseMs}::float8,
      ${input.customerId}::text, ${input.amountMinor}::bigint, ${input.currency}::text,
      ${input.description}::text,
      ${input.metadata === null ? null : JSON.stringify(input.metadata)}::jsonb,
      ${input.providerKey}::text)`);
  if (row?.claimed) return { kind: 'claimed' };
  if (row) return { kind: 'existing', state: toKeyState(keyStateRow.parse(row)) };
  // No row: the key conflicted, then was deleted (released by the sweeper at `started`, or a
  // tombstone purged) before the function read it. Look once more; the caller retries the claim if it is gone.
  const state = await findKey(db, tables, input);
  return state ? { kind: 'existing', state } : { kind: 'vanished' };
}
