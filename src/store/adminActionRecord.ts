import { z } from 'zod';
import { sql, type FragmentSqlToken, type IdentifierSqlToken } from 'slonik';
import type { Tables } from './tables.js';

/** What a person did to a key: `resolve` it with an outcome, or `requeue` it for the sweeper. */
export type AdminActionKind = 'resolve' | 'requeue';

/** One row of the audit trail, as the engine sees it. */
export type AdminActionRecord = {
  /** Increases with every action recorded, across keys: the audit trail's own order. */
  id: string;
  at: Date;
  action: AdminActionKind;
  /**
   * `resolve`: the outcome stored (a charge's `succeeded`, `declined`, `cancelled`; a refund's or
   * capture's `succeeded`, `failed`, `cancelled`). `requeue`: the recovery point the key went
   * back to (`reserved`, or `started` when it had no charge intent).
   */
  result: string;
  /** Who, as given (`--actor`); null only on a requeue of a version that did not require it. */
  actor: string | null;
  /** Why, as given (`--reason`); null only on a requeue of a version that did not require it. */
  reason: string | null;
  /**
   * The local charge the key's use was about when the action was taken: its own charge, or the
   * charge a refund or capture key moves money on.
   */
  chargeId: string;
  /** A refund or capture key: the local refund or capture; null for a charge key. */
  movementId: string | null;
  /** A charge resolved `succeeded` or `declined`: the provider's charge id. */
  providerChargeId: string | null;
  declineCode: string | null;
  /** A refund or capture resolved `succeeded` or `failed`: the provider's refund or capture id. */
  providerMovementId: string | null;
  /** A refund or capture resolved `failed`: the provider's failure code, when given. */
  failureCode: string | null;
  /** When the key had been parked, and why: the park this action ended. */
  parkedAt: Date | null;
  parkedReason: string | null;
};

/** The columns {@link toAdminActionRecord} reads, checked at the boundary. */
export const adminActionRow = z.object({
  id: z.string(),
  at_ms: z.number(),
  action: z.enum(['resolve', 'requeue']),
  result: z.string(),
  actor: z.string().nullable(),
  reason: z.string().nullable(),
  charge_id: z.string(),
  movement_id: z.string().nullable(),
  provider_charge_id: z.string().nullable(),
  decline_code: z.string().nullable(),
  provider_movement_id: z.string().nullable(),
  failure_code: z.string().nullable(),
  parked_at_ms: z.number().nullable(),
  parked_reason: z.string().nullable(),
});

/**
 * The rows of {@link adminActionRow} in `source` (the audit table, or the rows an insert
 * returned), as `a`, each with the refund or capture it was about (`m`, none for a charge key).
 * An audit row's `charge_id` is the id the key row held: a refund's or capture's own, on their
 * keys; the charge it moves money on is the movement's.
 */
export function selectAdminActions(tables: Tables, source: IdentifierSqlToken): FragmentSqlToken {
  return sql.fragment`
    SELECT a.id::text AS id,
      (extract(epoch FROM a.created_at) * 1000)::float8 AS at_ms,
      a.action, a.result, a.actor, a.reason,
      coalesce(m.charge_id, a.charge_id)::text AS charge_id, m.id::text AS movement_id,
      a.provider_charge_id, a.decline_code, a.provider_movement_id, a.failure_code,
      (extract(epoch FROM a.parked_at) * 1000)::float8 AS parked_at_ms,
      a.parked_reason
    FROM ${source} a
    LEFT JOIN ${tables.movements} m ON m.merchant_id = a.merchant_id AND m.id = a.charge_id`;
}

export function toAdminActionRecord(row: z.infer<typeof adminActionRow>): AdminActionRecord {
  return {
    id: row.id,
    at: new Date(row.at_ms),
    action: row.action,
    result: row.result,
    actor: row.actor,
    reason: row.reason,
    chargeId: row.charge_id,
    movementId: row.movement_id,
    providerChargeId: row.provider_charge_id,
    declineCode: row.decline_code,
    providerMovementId: row.provider_movement_id,
    failureCode: row.failure_code,
    parkedAt: row.parked_at_ms === null ? null : new Date(row.parked_at_ms),
    parkedReason: row.parked_reason,
  };
}
