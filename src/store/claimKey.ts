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

// One row: `claimed`, and the existing key's columns (all null when claimed).
const claimRow = keyStateRow.extend({
  claimed: z.boolean(),
  request_hash: z.string().nullable(),
  recovery_point: keyStateRow.shape.recovery_point.nullable(),
  charge_id: z.string().nullable(),
  lease_held: z.boolean().nullable(),
  lease_remaining_ms: z.number().int().nullable(),
  attempts: z.number().int().nullable(),
});

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
  const row = await db.one(sql.type(claimRow)`
    SELECT * FROM ${tables.claimKeyFunction}(
      ${input.merchantId}::text, ${input.operation}::text, ${input.key}::text,
      ${input.requestHash}::text, ${input.canonicalRequest}::text, ${input.reserve}::boolean,
      ${input.chargeId}::uuid, ${input.lockToken}::uuid, ${input.leaseMs}::float8,
      ${input.customerId}::text, ${input.amountMinor}::bigint, ${input.currency}::text,
      ${input.description}::text,
      ${input.metadata === null ? null : JSON.stringify(input.metadata)}::jsonb,
      ${input.providerKey}::text)`);
  if (row.claimed) return { kind: 'claimed' };
  if (
    row.request_hash !== null &&
    row.recovery_point !== null &&
    row.charge_id !== null &&
    row.lease_held !== null &&
    row.lease_remaining_ms !== null &&
    row.attempts !== null
  ) {
    return {
      kind: 'existing',
      state: toKeyState({
        ...row,
        request_hash: row.request_hash,
        recovery_point: row.recovery_point,
        charge_id: row.charge_id,
        lease_held: row.lease_held,
        lease_remaining_ms: row.lease_remaining_ms,
        attempts: row.attempts,
      }),
    };
  }
  // The key was reaped between the conflict and the read: look once more.
  const state = await findKey(db, tables, input);
  return state ? { kind: 'existing', state } : { kind: 'vanished' };
}
