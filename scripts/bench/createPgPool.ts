import pg from 'pg';
import type { DesignConnection } from './Design.js';

/**
 * A plain node-postgres pool of the design's size. Its clients keep the statements prepared on
 * them by name for as long as the connection lives.
 */
export function createPgPool(connection: DesignConnection): pg.Pool {
  const pool = new pg.Pool({ connectionString: connection.url, max: connection.poolSize });
  // An idle client whose backend dies emits 'error' on the pool; unheard, it would end the bench.
  pool.on('error', () => undefined);
  return pool;
}
