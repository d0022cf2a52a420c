import pg from 'pg';
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  createDriverFactory,
  StatementTimeoutError,
  UniqueIntegrityConstraintViolationError,
  type DriverFactory,
  type DriverTypeParser,
} from 'slonik';
import type { PgClientLike, PgPoolLike } from './pgPoolLike.js';

/**
 * The built-in PostgreSQL types slonik's default type parsers name, with their array types. Their
 * OIDs are fixed in every PostgreSQL, so no catalog query is needed to find them.
 */
const BUILTIN_OIDS: Readonly<Record<string, { oid: number; array: number }>> = {
  int8: { oid: 20, array: 1016 },
  date: { oid: 1082, array: 1182 },
  interval: { oid: 1186, array: 1187 },
  numeric: { oid: 1700, array: 1231 },
  timestamp: { oid: 1114, array: 1115 },
  timestamptz: { oid: 1184, array: 1185 },
};

type TypeParserLookup = (oid: number) => ((value: string) => unknown) | undefined;

/** OID → slonik's parser, for the types slonik overrides; undefined leaves pg's own. */
function typeParserLookup(typeParsers: readonly DriverTypeParser[]): TypeParserLookup {
  const byOid = new Map<number, (value: string) => unknown>();
  for (const parser of typeParsers) {
    const builtin = BUILTIN_OIDS[parser.name];
    if (!builtin) throw new Error(`chargeonce's slonik driver has no OID for type ${parser.name}`);
    byOid.set(builtin.oid, (value) => parser.parse(value));
    byOid.set(builtin.array, (value) => parseTextArray(value).map((v) => parser.parse(v)));
  }
  return (oid) => byOid.get(oid);
}

/** A one-dimensional PostgreSQL text array of non-null scalars (`{a,b}`), as these types print. */
function parseTextArray(value: string): string[] {
  const inner = value.slice(1, -1);
  if (inner === '') return [];
  return inner.split(',').map((item) => item.replace(/^"(.*)"$/, '$1'));
}

/** slonik's own error classes for what the engine tells apart, like slonik's pg driver does. */
function wrapError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const message = error.message.toLowerCase();
  if (message.includes('connection terminated unexpectedly')) {
    return new BackendTerminatedUnexpectedlyError(error);
  }
  if (message.includes('connection terminated')) return new BackendTerminatedError(error);
  const code = (error as { code?: unknown }).code;
  if (code === '57P01') return new BackendTerminatedError(error);
  if (code === '57014' && !message.includes('canceling statement due to user request')) {
    return new StatementTimeoutError(error);
  }
  if (code === '23505') return new UniqueIntegrityConstraintViolationError(error);
  return error;
}

/**
 * A slonik driver that borrows its connections from a node-postgres pool the caller owns, so
 * slonik (chargeonce's SQL layer) runs on the caller's `pg.Pool`: its settings (TLS, passwords,
 * limits) apply, and the connections are shared with the caller's own queries. A slonik
 * connection holds one checked-out pg client from creation to destruction; the pool this driver
 * serves is made with a short idle timeout, so an idle one goes back to the caller's pool soon.
 */
export function pgPoolDriverFactory(pool: PgPoolLike): DriverFactory {
  return createDriverFactory(({ driverConfiguration }) => {
    const lookup = typeParserLookup(driverConfiguration.typeParsers);
    // slonik's parsers for the types it overrides (int8 as a number, …), pg's for the rest.
    const types = {
      getTypeParser: (oid: number, format?: 'text' | 'binary'): unknown =>
        lookup(oid) ?? pg.types.getTypeParser(oid, format),
    };
    return Promise.resolve({
      createPoolClient: ({ clientEventEmitter }) => {
        let client: PgClientLike | undefined;
        let broken: Error | undefined;
        // A checked-out pg client with no 'error' listener takes the process down when its
        // backend dies; slonik destroys a connection that reports one.
        const onError = (error: Error) => {
          broken = error;
          clientEventEmitter.emit('error', wrapError(error) as Error);
        };
        return Promise.resolve({
          connect: async () => {
            client = await pool.connect();
            client.on('error', onError);
          },
          end: () => {
            if (client) {
              client.removeListener('error', onError);
              // A client that failed is destroyed, not handed to the caller's next query.
              client.release(broken ?? undefined);
              client = undefined;
            }
            return Promise.resolve();
          },
          query: async (text, values) => {
            if (!client) throw new Error('chargeonce: slonik queried a released connection');
            try {
              const result = await client.query({
                text,
                values,
                queryMode: 'extended',
                types,
              });
              return {
                command: result.command as never,
                fields: result.fields.map((field) => ({
                  dataTypeId: field.dataTypeID,
                  name: field.name,
                })),
                rowCount: result.rowCount,
                rows: result.rows,
              };
            } catch (error) {
              if (isConnectionLoss(error)) broken = error as Error;
              throw wrapError(error);
            }
          },
          stream: () => {
            throw new Error('chargeonce does not stream through its slonik driver');
          },
        });
      },
    });
  });
}

/**
 * True when the connection cannot be used again: its backend was terminated (57P0x), the
 * connection failed (class 08), or the socket went away.
 */
function isConnectionLoss(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^(08|57P0)/.test(code)) return true;
  return /terminat|not queryable|ECONNRESET|EPIPE/i.test(error.message);
}
