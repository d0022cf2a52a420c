import { createPool, type DatabasePool } from 'slonik';
import { InvalidConfigurationError, StoreUnavailableError } from '../errors.js';
import { resultParserInterceptor } from './resultParserInterceptor.js';
import { isStoreUnavailable } from './storeErrors.js';

/** A slonik pool, or a connection string from which chargeonce makes one of its own. */
export type PoolInput = DatabasePool | string;

/**
 * Creates a slonik pool tuned for chargeonce.
 *
 * slonik's default `resetConnection` runs `DISCARD ALL` whenever a connection goes back to the
 * pool: one more round trip for every statement. chargeonce leaves no session state behind, so
 * its pool skips it. Pass your own pool to `createChargeEngine` to keep your settings.
 *
 * @throws {StoreUnavailableError} when PostgreSQL cannot be reached (`cause` says why).
 * @throws {InvalidConfigurationError} when the connection string or an option is unusable, or
 * the server refuses it (wrong credentials, no such database); `cause` says why.
 */
export async function createEnginePool(
  connectionString: string,
  options: { maximumPoolSize?: number } = {},
): Promise<DatabasePool> {
  if (typeof connectionString !== 'string' || connectionString === '') {
    throw new InvalidConfigurationError('createEnginePool needs a PostgreSQL connection string');
  }
  try {
    return await createPool(connectionString, {
      maximumPoolSize: options.maximumPoolSize ?? 10,
      interceptors: [resultParserInterceptor],
      // A no-op that still awaits: slonik 47's release path needs to yield here, or a released
      // connection handed straight to a waiting client is stuck in its "pending release" state.
      resetConnection: async () => {},
    });
  } catch (error) {
    if (isStoreUnavailable(error)) throw new StoreUnavailableError({ cause: error });
    // The message never repeats the connection string: it may hold a password.
    throw new InvalidConfigurationError(
      `Cannot create a PostgreSQL pool from this connection string: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** Returns the pool and whether the caller of this function owns it (and must end it). */
export async function resolvePool(
  input: PoolInput,
): Promise<{ pool: DatabasePool; owned: boolean }> {
  if (typeof input === 'string') {
    return { pool: await createEnginePool(input), owned: true };
  }
  return { pool: input, owned: false };
}
