import { sql, type CommonQueryMethods } from 'slonik';
import {
  adminActionRow,
  selectAdminActions,
  toAdminActionRecord,
  type AdminActionKind,
  type AdminActionRecord,
} from './adminActionRecord.js';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/** An action to record on a parked key this transaction holds (see `takeParkedKey`). */
export type AdminActionInput = ScopedKey & {
  lockToken: string;
  action: AdminActionKind;
  result: string;
  actor: string | null;
  reason: string | null;
  providerChargeId: string | null;
  declineCode: string | null;
  /** A refund's or capture's provider id and failure code (null for a charge's action). */
  providerMovementId?: string | null;
  failureCode?: string | null;
};

/**
 * Records what a person did to a parked key, with the park it ends (when, and the reason) read
 * from the key row itself. Runs in the action's own transaction, after the key was taken and
 * before it leaves `failed`, fenced by the lock token: an action is never without its audit row,
 * nor an audit row without its action. Returns null when the key is not held by `lockToken`.
 */
export async function insertAdminAction(
  db: CommonQueryMethods,
  tables: Tables,
  input: AdminActionInput,
): Promise<AdminActionRecord | null> {
  const row = await db.maybeOne(sql.type(adminActionRow)`
    WITH inserted AS (
      INSERT INTO ${tables.adminActions} (merchant_id, operation, key, charge_id, action, result,
        actor, reason, provider_charge_id, decline_code, provider_movement_id, failure_code,
        parked_at, parked_reason)
      SELECT k.merchant_id, k.operation, k.key, k.charge_id, ${input.action}, ${input.result},
        ${input.actor}, ${input.reason}, ${input.providerChargeId}, ${input.declineCode},
        ${input.providerMovementId ?? null}, ${input.failureCode ?? null},
        -- A key parked before failed_at existed was last touched when it was parked.
        coalesce(k.failed_at, k.updated_at), k.last_error
      FROM ${tables.keys} k
      WHERE k.merchant_id = ${input.merchantId}
        AND k.operation = ${input.operation}
        AND k.key = ${input.key}
        AND k.lock_token = ${input.lockToken}::uuid
        AND k.recovery_point = 'failed'
      RETURNING *
    )
    ${selectAdminActions(tables, sql.identifier(['inserted']))}`);
  return row ? toAdminActionRecord(row) : null;
}
