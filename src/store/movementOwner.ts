import { sql, type FragmentSqlToken } from 'slonik';
import type { Tables } from './tables.js';

/**
 * SQL true when the key `k` (a row of `idempotency_keys`) guards a refund or capture of a charge
 * made under another operation than `operation`: another engine's provider made that movement,
 * and its own retries and sweepers finish it. A charge made before charges recorded their
 * operation (null) is nobody else's.
 */
export function movementOfAnotherOperation(tables: Tables, operation: string): FragmentSqlToken {
  return sql.fragment`EXISTS (
    SELECT 1 FROM ${tables.movements} m
    JOIN ${tables.charges} c ON c.merchant_id = m.merchant_id AND c.id = m.charge_id
    WHERE k.operation IN ('refund', 'capture')
      AND m.merchant_id = k.merchant_id AND m.id = k.charge_id
      AND c.operation <> ${operation})`;
}
