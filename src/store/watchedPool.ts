import { FORWARDS_HOT_QUERIES } from './hotQuery.js';
import type { PgPoolLike, PgQueryConfig, PgQueryResult } from './pgPoolLike.js';

/** node-postgres's `query`, which also takes a callback (a hot statement's: see hotQuery). */
type SendQuery = (config: PgQueryConfig, callback?: unknown) => Promise<PgQueryResult>;

/**
 * `pool`, with every query shown to `see` before it goes (to count the engine's statements, say).
 * Queries go on as they came, a hot statement's callback with it, and the wrapper says so: the
 * engine sends it hot statements exactly when it would send them to `pool`.
 */
export function watchedPool(pool: PgPoolLike, see: (config: PgQueryConfig) => void): PgPoolLike {
  const send: SendQuery = pool.query.bind(pool);
  const watched: PgPoolLike & { [FORWARDS_HOT_QUERIES]: PgPoolLike } = {
    connect: () => pool.connect(),
    query: (config: PgQueryConfig, callback?: unknown) => {
      see(config);
      return send(config, callback);
    },
    end: () => pool.end(),
    ...(pool.options === undefined ? {} : { options: pool.options }),
    [FORWARDS_HOT_QUERIES]: pool,
  };
  return watched;
}
