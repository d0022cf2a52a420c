import { sql, type FragmentSqlToken } from 'slonik';
import type { Tables } from './tables.js';

/** The local charge intent, written before money moves. */
export type ChargeIntent = {
  merchantId: string;
  /** The operation of the charge's key: its refunds and captures go through engines of it. */
  operation: string;
  providerKey: string;
  customerId: string;
  amountMinor: number;
  currency: string;
  description: string | null;
  metadata: Record<string, string> | null;
  /** Made with `capture: false`: the money is taken later, by a capture. */
  authorizedOnly: boolean;
};

/**
 * `INSERT` of the charge intent for the `charge_id` of each row of `source` (a CTE that claimed
 * or advanced the key), for use inside a data-modifying CTE: the intent commits with the key's
 * move to `reserved`, in the same statement.
 */
export function insertChargeIntent(
  tables: Tables,
  intent: ChargeIntent,
  source: FragmentSqlToken,
): FragmentSqlToken {
  return sql.fragment`
    INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
      description, metadata, provider_key, status, authorized_only, operation)
    SELECT ${intent.merchantId}, charge_id, ${intent.customerId}, ${intent.amountMinor},
      ${intent.currency}, ${intent.description},
      ${intent.metadata === null ? null : sql.jsonb(intent.metadata)}, ${intent.providerKey},
      'reserved', ${intent.authorizedOnly}, ${intent.operation}
    FROM ${source}
    RETURNING id`;
}
