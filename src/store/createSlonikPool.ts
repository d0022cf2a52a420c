import { createPool, type DatabasePool } from 'slonik';
import { InvalidConfigurationError, StoreUnavailableError } from '../errors.js';
import { resultParserInterceptor } from './resultParserInterceptor.js';
import { isStoreUnavailable } from './storeErrors.js';

/**
 * What every slonik pool of chargeonce's is made with: rows checked against their zod schema,
 * and no `DISCARD ALL` on release (see below).
 */
export const SLONIK_POOL_SETTINGS = {
  interceptors: [resultParserInterceptor],
  // A no-op that still awaits: slonik 47's release path needs to yield here, or a released
  // connection handed straight to a waiting client is stuck in its "pending release" state.
  resetConnection: async () => {},
};

/**
 * A slonik pool of its own on a connection string, tuned like the engine's: for chargeonce's
 * internal tools (the chaos harness, reconciliation) and its tests, which speak slonik. The
 * public way to a pool is `createEnginePool` (node-postgres).
 *
 * slonik's default `resetConnection` runs `DISCARD ALL` whenever a connection goes back to the
 * pool: one more round trip for every statement. chargeonce leaves no session state behind, so
 * this pool skips it.
 *
 * @throws {StoreUnavailableError} when PostgreSQL cannot be reached.
 * @throws {InvalidConfigurationError} when the connection string is unusable.
 */
export async function createSlonikPool(
  connectionString: string,
  options: { maximumPoolSize?: number } = {},
): Promise<DatabasePool> {
  try {
    /* eslint-disable no-restricted-syntax -- once per pool, not per charge */
    return await createPool(connectionString, {
      ...SLONIK_POOL_SETTINGS,
      maximumPoolSize: options.maximumPoolSize ?? 10,
    });
    /* eslint-enable no-restricted-syntax */
  } catch (error) {
    if (isStoreUnavailable(error)) throw new StoreUnavailableError({ cause: error });
    throw new InvalidConfigurationError(
      `Cannot create a PostgreSQL pool from this connection string: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
