import pg from 'pg';
import type { PreparedStatement } from './hotStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';

/**
 * node-postgres's mapping of values to the text it sends (arrays, JSON, dates, buffers), which it
 * keeps on its module object, undeclared in its types.
 */
const prepareValue = (pg as unknown as { utils: { prepareValue: (value: unknown) => unknown } })
  .utils.prepareValue;

/** A result row of a hot statement, its columns parsed as node-postgres parses them. */
export type HotRow = Record<string, unknown>;

/** The columns a statement returns, learned from its first row description. */
type Columns = { names: readonly string[]; parsers: readonly ((text: string) => unknown)[] };

/**
 * The row description of each hot statement (by name), per connection: a statement prepared on a
 * connection keeps its columns there (PostgreSQL refuses to run it if they would change), while
 * another connection, to another database or after a migration, may see others.
 */
const describedOn = new WeakMap<object, Map<string, Columns>>();

/** What node-postgres's connection offers a submitted query (the part used here). */
type PgConnection = {
  parsedStatements: Record<string, string | undefined>;
  submittedNamedStatements?: Record<string, string | undefined>;
  stream: { cork?: () => void; uncork?: () => void };
  parse(message: { text: string; name: string; types: number[] }): void;
  bind(message: {
    portal: string;
    statement: string;
    values: readonly unknown[];
    valueMapper: (value: unknown) => unknown;
  }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
  close(message: { type: 'S'; name: string }): void;
  sendCopyFail(message: string): void;
};

type Done = (error: Error | null, rows?: HotRow[]) => void;

/**
 * One execution of a named prepared statement, as a node-postgres "submittable" (the interface
 * pg-cursor uses): what `pool.query({ name, text, values })` sends, less what a hot statement
 * does not need on every call.
 *
 * - No Describe once the statement's columns are known on the connection: node-postgres asks for
 *   (and PostgreSQL builds, sends, and pg parses into a field list and a row template) a row
 *   description on every execution; a claim's has fifteen columns.
 * - No promise of pg's own, and none of pg-pool's: the caller's callback is called once, at the
 *   end, and the caller makes the one promise the engine awaits.
 *
 * The messages sent are Parse and Describe (first use on a connection), Bind, Execute, Sync: one
 * round trip, as before.
 */
class HotQuery {
  /** Read by node-postgres: it records the statement as parsed on the connection by name. */
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  /** Set by node-postgres (pg-pool's callback, which releases the connection). */
  callback: Done | undefined;
  private readonly rows: HotRow[] = [];
  private described: Map<string, Columns> | undefined;
  private columns: Columns | undefined;
  private failure: Error | null = null;

  constructor(statement: PreparedStatement, values: readonly unknown[]) {
    this.name = statement.name;
    this.text = statement.text;
    this.values = values;
  }

  submit(connection: PgConnection): Error | null {
    let described = describedOn.get(connection);
    if (!described) {
      described = new Map();
      describedOn.set(connection, described);
    }
    this.described = described;
    this.columns = described.get(this.name);
    const known =
      connection.parsedStatements[this.name] ?? connection.submittedNamedStatements?.[this.name];
    if (known !== undefined && known !== this.text) {
      return new Error(`chargeonce: prepared statement ${this.name} has another text`);
    }
    connection.stream.cork?.();
    try {
      if (known === undefined) {
        connection.parse({ text: this.text, name: this.name, types: [] });
        if (connection.submittedNamedStatements)
          connection.submittedNamedStatements[this.name] = this.text;
      }
      try {
        connection.bind({
          portal: '',
          statement: this.name,
          values: this.values,
          valueMapper: prepareValue,
        });
      } catch (error) {
        // As node-postgres: a value it cannot send fails this query, and the connection syncs.
        connection.close({ type: 'S', name: this.name });
        connection.sync();
        this.finish(error instanceof Error ? error : new Error(String(error)));
        return null;
      }
      if (!this.columns) connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '' });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: { name: string; dataTypeID: number }[] }): void {
    const columns: Columns = {
      names: message.fields.map((field) => field.name),
      parsers: message.fields.map(
        (field) => pg.types.getTypeParser(field.dataTypeID, 'text') as (text: string) => unknown,
      ),
    };
    this.described?.set(this.name, columns);
    this.columns = columns;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    const columns = this.columns;
    if (!columns || columns.names.length !== message.fields.length) {
      // Not expected (a statement keeps its columns on its connection), but never misread: the
      // next execution asks for the description again.
      this.described?.delete(this.name);
      this.failure ??= new Error(`chargeonce: statement ${this.name} returned unexpected columns`);
      return;
    }
    const row: HotRow = {};
    const { names, parsers } = columns;
    try {
      for (let i = 0; i < names.length; i++) {
        const text = message.fields[i];
        row[names[i] as string] = text === null || text === undefined ? null : parsers[i]!(text);
      }
    } catch (error) {
      // As pg: a parser that throws (one set with `pg.types.setTypeParser`) fails the query at
      // its end, never the connection's message loop.
      this.failure ??= error instanceof Error ? error : new Error(String(error));
      return;
    }
    this.rows.push(row);
  }

  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('chargeonce: no COPY here');
  }
  handleCopyData(): void {}

  /** An error from PostgreSQL (no ReadyForQuery reaches this query after it) or the connection. */
  handleError(error: Error): void {
    this.finish(error);
  }

  handleReadyForQuery(): void {
    this.finish(this.failure);
  }

  private finish(error: Error | null): void {
    const done = this.callback;
    this.callback = undefined;
    if (!done) return;
    if (error) done(error);
    else done(null, this.rows);
  }
}

/** A pool whose `query` also takes a submittable and a callback (node-postgres's does). */
type SubmittingPool = {
  query(query: HotQuery, callback: Done): unknown;
};

/**
 * Set by a wrapper of a pool (a counting one, say) whose `query(config, callback)` hands a
 * submittable and its callback to the pool it names, unchanged: the wrapper takes hot queries
 * when that pool does.
 */
export const FORWARDS_HOT_QUERIES: unique symbol = Symbol('chargeonce.forwardsHotQueries');

type MaybeForwarding = { [FORWARDS_HOT_QUERIES]?: PgPoolLike };

/**
 * Whether `pool` is node-postgres's own pool, from the copy of pg chargeonce depends on (8.23 or
 * newer: its client attaches pg-pool's callback to a submittable), with its JavaScript client, its
 * own `query`, and no pipeline mode (which refuses submittables). Anything else (pg-native's
 * pool, another copy of pg, a subclass with a `query` of its own, a wrapper) gets ordinary
 * queries.
 */
export function takesHotQueries(pool: PgPoolLike): boolean {
  const forwarded = (pool as MaybeForwarding)[FORWARDS_HOT_QUERIES];
  if (forwarded) return takesHotQueries(forwarded);
  return (
    pool instanceof pg.Pool &&
    pool.query === pg.Pool.prototype.query &&
    (pool as unknown as { Client?: unknown }).Client === pg.Client &&
    (pool.options as { pipeline?: unknown }).pipeline !== true
  );
}

/** Runs a named prepared statement as a `HotQuery`: its rows, in order. */
export function runHotQuery(
  pool: PgPoolLike,
  statement: PreparedStatement,
  values: readonly unknown[],
): Promise<HotRow[]> {
  return new Promise((resolve, reject) => {
    (pool as unknown as SubmittingPool).query(new HotQuery(statement, values), (error, rows) => {
      if (error) reject(error);
      else resolve(rows ?? []);
    });
  });
}

/**
 * A named prepared statement's rows: as a `HotQuery` on node-postgres's own pool, else as an
 * ordinary named query.
 */
export function queryPrepared(
  pool: PgPoolLike,
  statement: PreparedStatement,
  values: unknown[],
): Promise<HotRow[]> {
  if (takesHotQueries(pool)) return runHotQuery(pool, statement, values);
  // Written out: on Node 20, `{ ...x, more }` gets a hidden class of its own on every call.
  return pool
    .query({ name: statement.name, text: statement.text, values })
    .then((result) => result.rows);
}
