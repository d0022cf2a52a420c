import { createPool, type DatabasePool } from 'slonik';

/**
 * A slonik pool as chargeonce's own used to be tuned: no `DISCARD ALL` when a connection goes
 * back (one more round trip per statement otherwise). For the slonik designs and the bench's own
 * queries (migrations, emptying tables, the sweep's seed).
 */
export function createSlonikPool(url: string, maximumPoolSize: number): Promise<DatabasePool> {
  return createPool(url, {
    maximumPoolSize,
    // A no-op that still awaits: slonik 47's release path needs to yield here, or a released
    // connection handed straight to a waiting client is stuck in its "pending release" state.
    resetConnection: async () => {},
  });
}
