import { z } from 'zod';
import { sql, type CommonQueryMethods } from 'slonik';
import { keyStateColumns, keyStateFrom, keyStateRow, nowPlusMs, toKeyState } from './keyState.js';
import type { KeyState, ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';
import { insertChargeIntent, type ChargeIntent } from './chargeIntent.js';
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

// One row always: `claimed`, and the existing key's columns (all null when claimed or unseen).
const claimRow = z
  .object({ claimed: z.boolean(), request_hash: z.string().nullable() })
  .passthrough();

/**
 * Claims the key and reserves the charge in one statement, so a fresh charge's first phase is one
 * round trip and one commit. The primary key is the lock: of any number of racing claims exactly
 * one inserts; the others read the winner's row in the same statement.
 *
 * The read sees the statement's snapshot. A winner that committed after that snapshot is
 * invisible to it, so that rare race falls back to a second read (`findKey`).
 */
export async function claimKey(
  db: CommonQueryMethods,
  tables: Tables,
  input: ClaimInput,
): Promise<ClaimResult> {
  const row = await db.one(sql.type(claimRow)`
    WITH claimed AS (
      INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until)
      VALUES (${input.merchantId}, ${input.operation}, ${input.key}, ${input.requestHash},
        ${input.canonicalRequest}, ${input.reserve ? 'reserved' : 'started'},
        ${input.chargeId}::uuid, ${input.lockToken}::uuid,
        ${nowPlusMs(input.leaseMs)})
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING charge_id
    ), intent AS (
      ${insertChargeIntent(tables, input, input.reserve ? sql.fragment`claimed` : sql.fragment`claimed WHERE false`)}
    )
    SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, existing.*
    FROM (SELECT 1) AS one
    LEFT JOIN LATERAL (
      SELECT ${keyStateColumns}
      FROM ${keyStateFrom(tables, input)}
        AND NOT EXISTS (SELECT 1 FROM claimed)
    ) AS existing ON true
  `);
  if (row.claimed) return { kind: 'claimed' };
  if (row.request_hash !== null) {
    return { kind: 'existing', state: toKeyState(keyStateRow.parse(row)) };
  }
  const state = await findKey(db, tables, input);
  return state ? { kind: 'existing', state } : { kind: 'vanished' };
}
