import { createPool, type DatabasePool } from 'slonik';
import { resultParserInterceptor } from './resultParserInterceptor.js';

/** A slonik pool, or a connection string from which chargeonce makes one of its own. */
export type PoolInput = DatabasePool | string;

/**
 * Creates a slonik pool tuned for chargeonce.
 *
 * slonik's default `resetConnection` runs `DISCARD ALL` whenever a connection goes back to the
 * pool: one more round trip for every statement. chargeonce leaves no session state behind, so
 * its pool skips it. Pass your own pool to `createChargeEngine` to keep your settings.
 */
export async function createEnginePool(
  connectionString: string,
  options: { maximumPoolSize?: number } = {},
): Promise<DatabasePool> {
  return createPool(connectionString, {
    maximumPoolSize: options.maximumPoolSize ?? 10,
    interceptors: [resultParserInterceptor],
    // A no-op that still awaits: slonik 47's release path needs to yield here, or a released
    // connection handed straight to a waiting client is stuck in its "pending release" state.
    resetConnection: async () => {},
  });
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
