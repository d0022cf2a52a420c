import { sql, type CommonQueryMethods } from 'slonik';
import {
  adminActionRow,
  selectAdminActions,
  toAdminActionRecord,
  type AdminActionRecord,
} from './adminActionRecord.js';
import type { ScopedKey } from './keyState.js';
import type { Tables } from './tables.js';

/**
 * The audit trail of one use of a key (its charge), oldest first. Actions on an earlier use of
 * the same key (one forgotten after its tombstone, then used again) carry another charge id.
 */
export async function readAdminActions(
  db: CommonQueryMethods,
  tables: Tables,
  scoped: ScopedKey & { chargeId: string },
): Promise<AdminActionRecord[]> {
  const rows = await db.any(sql.type(adminActionRow)`
    ${selectAdminActions(tables, tables.adminActions)}
    WHERE a.merchant_id = ${scoped.merchantId}
      AND a.operation = ${scoped.operation}
      AND a.key = ${scoped.key}
      AND a.charge_id = ${scoped.chargeId}::uuid
    ORDER BY a.id`);
  return rows.map(toAdminActionRecord);
}
