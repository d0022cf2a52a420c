import type { DatabasePool } from 'slonik';
import { readLedgerRows } from '../store/readLedgerRows.js';
import { withStore } from '../store/storeErrors.js';
import { tablesIn } from '../store/tables.js';
import type { ProviderLedgerEntry, Violation } from './reconcile.js';

/**
 * Provider charges under a key that none of `merchantIds`' local charges has. `reconcile` with a
 * merchant filter leaves these alone (on a shared provider they may be someone else's); on the
 * harness's own fake provider every charge is the run's, so each one is a lost charge.
 *
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function findStrayCharges(
  pool: DatabasePool,
  schema: string,
  merchantIds: readonly string[],
  ledger: readonly ProviderLedgerEntry[],
): Promise<Violation[]> {
  const { charges } = await withStore(() => readLedgerRows(pool, tablesIn(schema), merchantIds));
  const known = new Set(charges.map((c) => c.providerKey));
  const reported = new Set<string>();
  const violations: Violation[] = [];
  for (const entry of ledger) {
    if (known.has(entry.providerKey) || reported.has(entry.providerKey)) continue;
    reported.add(entry.providerKey);
    violations.push({
      kind: 'lost_charge',
      providerKey: entry.providerKey,
      providerChargeId: entry.id,
      detail: 'the provider charged under a key with no local charge',
    });
  }
  return violations;
}
