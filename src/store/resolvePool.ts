import pg from 'pg';
import { createPool, type DatabasePool } from 'slonik';
import { InvalidConfigurationError, StoreUnavailableError } from '../errors.js';
import { pgPoolDriverFactory } from './pgPoolDriver.js';
import type { GroupCommit } from './groupCommit.js';
import type { KeyWaiters } from './keyWaiters.js';
import type { EnginePool, PgPoolLike } from './pgPoolLike.js';
import { SLONIK_POOL_SETTINGS } from './createSlonikPool.js';
import { isStoreUnavailable } from './storeErrors.js';

/**
 * A slonik pool, described by shape only: slonik's own types never appear in chargeonce's API, so
 * a pool from another slonik version type-checks too. chargeonce sends it slonik query tokens.
 */
export type SlonikPoolLike = {
  transaction: (...args: never[]) => Promise<unknown>;
  query: (...args: never[]) => Promise<unknown>;
  end(): Promise<void>;
};

/**
 * Where chargeonce finds PostgreSQL: a connection string (chargeonce makes and owns a pool), a
 * node-postgres `pg.Pool` (yours: chargeonce borrows connections and never ends it), or a slonik
 * pool (yours too).
 */
export type PoolInput = string | PgPoolLike | SlonikPoolLike;

/**
 * What the engine runs on: slonik, its SQL layer, and, when the pool is node-postgres, the same
 * pool for the hot statements, sent as named prepared statements without slonik in between.
 */
export type StorePools = {
  slonik: DatabasePool;
  pg: PgPoolLike | null;
  /** The hot statements with group commit, when the engine has a node-postgres pool and wants it. */
  group?: GroupCommit | null;
  /** Callers waiting on keys in progress, woken on commit (node-postgres pools only). */
  waiters?: KeyWaiters | null;
  /** Ends what chargeonce created for this input (and the pool itself for a connection string). */
  end(): Promise<void>;
};

/** Options of {@link createEnginePool}. */
export type EnginePoolOptions = {
  /**
   * Connections at most.
   * @defaultValue `10`
   */
  maximumPoolSize?: number;
};

/**
 * Creates a node-postgres pool for chargeonce from a connection string, and checks that it
 * connects. It is yours: pass it to `createChargeEngine` and `migrate`, use it for your own
 * queries, and `end()` it when done.
 *
 * @throws {StoreUnavailableError} when PostgreSQL cannot be reached (`cause` says why).
 * @throws {InvalidConfigurationError} when the connection string or an option is unusable, or
 * the server refuses it (wrong credentials, no such database); `cause` says why.
 */
export async function createEnginePool(
  connectionString: string,
  options: EnginePoolOptions = {},
): Promise<EnginePool> {
  if (typeof connectionString !== 'string' || connectionString === '') {
    throw new InvalidConfigurationError('createEnginePool needs a PostgreSQL connection string');
  }
  const max = options.maximumPoolSize ?? 10;
  if (!(Number.isInteger(max) && max > 0)) {
    throw new InvalidConfigurationError('maximumPoolSize must be a positive integer');
  }
  if (!isPostgresUrl(connectionString)) {
    // The message never repeats the connection string: it may hold a password.
    throw new InvalidConfigurationError(
      'createEnginePool needs a connection string of the form postgres://user:password@host:port/database',
      { cause: new TypeError('not a postgres:// or postgresql:// URL') },
    );
  }
  let pool: pg.Pool | undefined;
  try {
    pool = new pg.Pool({ connectionString, max });
    // An idle connection whose backend dies emits 'error' on the pool; unheard, it would end the
    // process. The next query on that pool gets a fresh connection (or the real error).
    pool.on('error', () => undefined);
    await pool.query('SELECT 1');
    return pool;
  } catch (error) {
    await pool?.end().catch(() => undefined);
    if (isStoreUnavailable(error)) throw new StoreUnavailableError({ cause: error });
    // The message never repeats the connection string: it may hold a password.
    throw new InvalidConfigurationError(
      `Cannot connect to PostgreSQL with this connection string: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** True for a URL whose scheme is `postgres:` or `postgresql:`: a connection string. */
export function isPostgresUrl(text: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** Runs `end` once, however often it is called. */
function once(end: () => Promise<void>): () => Promise<void> {
  let ended: Promise<void> | undefined;
  return () => (ended ??= end());
}

/** True for a slonik pool: node-postgres pools have no `transaction`. */
function isSlonikPool(input: object): input is SlonikPoolLike {
  return typeof (input as { transaction?: unknown }).transaction === 'function';
}

/** True for a node-postgres pool (or one shaped like it). */
function isPgPool(input: object): input is PgPoolLike {
  const candidate = input as Partial<PgPoolLike>;
  return typeof candidate.connect === 'function' && typeof candidate.query === 'function';
}

/** True when `input` is something {@link resolvePool} can use; checked before any I/O. */
export function isPoolInput(input: unknown): input is PoolInput {
  if (typeof input === 'string') return input !== '';
  return typeof input === 'object' && input !== null && (isSlonikPool(input) || isPgPool(input));
}

/**
 * slonik over a node-postgres pool. Its connections are borrowed from `pool` and handed back as
 * soon as slonik leaves them idle (1 ms, slonik's shortest), so the hot statements sent to `pool`
 * directly find connections free. Held longer, they starved the hot statements: with a `reserve`
 * hook on every other charge, 32 callers on a 10-connection pool, a 100 ms hold gave 250
 * charges/s at a p50 of 120 ms, handing them back 1,200/s at 25 ms. Borrowing one again is
 * `pool.connect()` of an idle client, with no round trip.
 */
async function slonikOver(pool: PgPoolLike): Promise<DatabasePool> {
  const max = pool.options?.max;
  return createPool('postgres://chargeonce.invalid/borrowed', {
    driverFactory: pgPoolDriverFactory(pool),
    maximumPoolSize: typeof max === 'number' && max > 0 ? max : 10,
    idleTimeout: 1,
    ...SLONIK_POOL_SETTINGS,
  });
}

/** Resolves a {@link PoolInput} into what the engine runs on. */
export async function resolvePool(input: PoolInput): Promise<StorePools> {
  if (typeof input === 'string') {
    const pool = await createEnginePool(input);
    const slonik = await slonikOver(pool);
    return {
      slonik,
      pg: pool,
      end: once(async () => {
        await slonik.end();
        await pool.end();
      }),
    };
  }
  // Called from JavaScript without one (`migrate()`): said as configuration, not a TypeError.
  if (typeof input !== 'object' || input === null) throw notAPool();
  if (isSlonikPool(input)) {
    return { slonik: input as unknown as DatabasePool, pg: null, end: async () => {} };
  }
  if (isPgPool(input)) {
    const slonik = await slonikOver(input);
    return { slonik, pg: input, end: once(() => slonik.end()) };
  }
  throw notAPool();
}

function notAPool(): InvalidConfigurationError {
  return new InvalidConfigurationError(
    'pool must be a connection string, a node-postgres Pool or a slonik pool',
  );
}
