/**
 * The parts of node-postgres chargeonce uses, as structural types: a `pg.Pool` of any 8.x version
 * fits, and no `pg` type appears in chargeonce's public API.
 */

/** A query as node-postgres takes it: `name` makes it a prepared statement on each connection. */
export type PgQueryConfig = {
  text: string;
  values?: unknown[];
  name?: string;
  queryMode?: 'extended';
  types?: { getTypeParser: (oid: number, format?: 'text' | 'binary') => unknown };
};

/** What node-postgres answers. */
export type PgQueryResult = {
  command: string;
  rowCount: number | null;
  rows: Record<string, unknown>[];
  fields: { name: string; dataTypeID: number }[];
};

/** A connection checked out of a pool. */
export type PgClientLike = {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  release(error?: Error | boolean): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeListener(event: 'error', listener: (error: Error) => void): unknown;
};

/** A node-postgres `Pool` (or anything shaped like one). */
export type PgPoolLike = {
  connect(): Promise<PgClientLike>;
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  end(): Promise<void>;
  /** The pool's `max`, when it says. */
  options?: { max?: number };
};

/**
 * What `createEnginePool` returns: a node-postgres `pg.Pool`, typed by shape as the rest of
 * chargeonce's API is, with the calls an application makes on it besides the engine's: a query
 * as text and values, and its `error` event. (`as pg.Pool` gives the whole of its type.)
 */
export type EnginePool = PgPoolLike & {
  query(text: string, values?: unknown[]): Promise<PgQueryResult>;
  on(event: 'error', listener: (error: Error) => void): unknown;
};
