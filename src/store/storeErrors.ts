import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  StatementTimeoutError,
} from 'slonik';
import { ChargeOnceError, SchemaNotMigratedError, StoreUnavailableError } from '../errors.js';
import { rejected } from '../rejected.js';
import { isHookError } from './hookErrors.js';
import { tablesIn } from './tables.js';

// The one place where PostgreSQL and driver failures are classified.

/**
 * SQLSTATEs after which the transaction is known to have rolled back and can simply run again.
 * slonik retries these itself (`queryRetryLimit`, `transactionRetryLimit`).
 */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/**
 * SQLSTATE classes and codes that mean the database is out of reach for now: connection
 * exceptions, shutdowns, too many connections, statement timeout, a read-only server after a
 * failover (25006), a lock not available in time (55P03), and system errors (58). Not 08P01,
 * protocol violation: PostgreSQL answers it to a statement sent with the wrong number of values
 * (a hook's mistake), which no retry mends.
 */
const UNAVAILABLE_SQLSTATE = /^(08(?!P01)|57P0[1-3]|53300|57014|25006|55P03|58)/;

/** Socket-level failures from the driver. */
const UNAVAILABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
]);

/**
 * The names of chargeonce's own tables and functions (without their schema): a missing one of
 * these means the schema was not migrated. A missing object of anyone else's (a hook's SQL, say)
 * is that code's own error and passes through.
 */
const OWN_OBJECTS: ReadonlySet<string> = new Set(
  Object.values(tablesIn()).flatMap((value) =>
    typeof value === 'object' && 'names' in value ? value.names.slice(-1) : [],
  ),
);

/** A name as PostgreSQL prints it in a message: bare, or in double quotes. */
const NAME = String.raw`"?([^".()\s]+)"?`;

/**
 * What PostgreSQL says when an unmigrated schema is used: `relation "x.t" does not exist`
 * (42P01), or `schema "x" does not exist` (3F000, for what is looked up in a schema that is not
 * there). The capture groups are the schema and the object. chargeonce has no functions of its
 * own, so a missing function (42883) is always someone else's error.
 */
const MISSING_OBJECT: Readonly<Record<string, RegExp>> = {
  '3F000': new RegExp(`^schema ${NAME} does not exist`),
  '42P01': new RegExp(`^relation "(?:([^".]+)\\.)?([^".]+)" does not exist`),
};

/**
 * The columns chargeonce's migrations added to its tables after the first: code of a newer
 * version run on a schema not yet migrated to it meets one of these missing (42703). Kept equal
 * to the migrations' `ADD COLUMN`s by a test.
 */
export const LATER_COLUMNS: ReadonlySet<string> = new Set([
  'failed_at',
  'has_waiters',
  'authorized_only',
  'captured_minor',
  'capture_reserved_minor',
  'refund_reserved_minor',
  'refunded_minor',
  'provider_movement_id',
  'failure_code',
  'sweeps',
  'operation',
]);

/**
 * What PostgreSQL says of a missing column (42703): `column "c" does not exist`, `column k.c does
 * not exist`, or `column "c" of relation "t" does not exist`. The capture group is the column.
 */
const MISSING_COLUMN =
  /^column (?:"?[^".\s]+"?\.)?"?([^".\s]+)"?(?: of relation "[^"]+")? does not exist/;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : '';
}

/**
 * The schema chargeonce's missing objects were looked for in, when the error says that the schema
 * was not migrated: `{ schema }` (`undefined` when unnamed), else null.
 */
export function missingSchemaOf(error: unknown): { schema: string | undefined } | null {
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    if (isHookError(e)) return null;
    const code = codeOf(e);
    // A column a later migration adds: the schema is there, at an older version. PostgreSQL
    // does not name the schema in this message.
    if (code === '42703' && LATER_COLUMNS.has(MISSING_COLUMN.exec(messageOf(e))?.[1] ?? '')) {
      return { schema: undefined };
    }
    const pattern = code === undefined ? undefined : MISSING_OBJECT[code];
    const match = pattern?.exec(messageOf(e));
    if (!match) continue;
    // 3F000 names only the schema, not what was looked for in it. chargeonce's own statements
    // meet it when they call its functions in a schema that is not there (its tables give
    // 42P01); a hook's SQL naming a missing schema would be reported so too, its cause intact.
    if (code === '3F000') return { schema: match[1] };
    if (match[2] !== undefined && OWN_OBJECTS.has(match[2])) return { schema: match[1] };
  }
  return null;
}

export function codeOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = error.code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

function causeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'cause' in error ? error.cause : undefined;
}

/** True for a serialization failure or a deadlock: the work rolled back and may run again. */
export function isRetryableStoreError(error: unknown): boolean {
  return anyCause(error, (e) => RETRYABLE_SQLSTATES.has(codeOf(e) ?? ''));
}

/** True when `error` or one of its causes (five deep at most) passes `test`. */
export function anyCause(error: unknown, test: (e: unknown) => boolean): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    if (test(e)) return true;
  }
  return false;
}

/** True when the database could not be reached or dropped the connection. */
export function isStoreUnavailable(error: unknown): boolean {
  return anyCause(error, isUnavailableItself);
}

/** One error of a cause chain, on its own: see `isStoreUnavailable`. */
function isUnavailableItself(e: unknown): boolean {
  if (
    e instanceof ConnectionError ||
    e instanceof BackendTerminatedError ||
    e instanceof BackendTerminatedUnexpectedlyError ||
    e instanceof StatementTimeoutError
  ) {
    return true;
  }
  const code = codeOf(e);
  if (code !== undefined && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) {
    return true;
  }
  return e instanceof Error && /Connection terminated|pool (is )?(ended|closed)/i.test(e.message);
}

/**
 * SQLSTATEs of a statement cut short while it waited: canceled (57014, a statement timeout among
 * others) or a lock not granted in time (55P03). Unavailable for the call that met them, but they
 * depend on what the statement waited for, so a batch that met one is worth sending again call by
 * call (see `isOutOfReach`).
 */
const WAIT_CUT_SHORT_SQLSTATES = new Set(['57014', '55P03']);

function isWaitCutShort(error: unknown): boolean {
  return anyCause(
    error,
    (e) => e instanceof StatementTimeoutError || WAIT_CUT_SHORT_SQLSTATES.has(codeOf(e) ?? ''),
  );
}

/**
 * True when the database itself is out of reach (refused, dropped, shutting down, full): every
 * statement sent now would meet the same. Not a statement that waited too long: that depends on
 * which rows it touched, and sent alone the others would not wait.
 */
export function isOutOfReach(error: unknown): boolean {
  return isStoreUnavailable(error) && !isWaitCutShort(error);
}

/**
 * Maps a failure from the store to the error chargeonce throws; its own errors pass through.
 * chargeonce's tables missing (SQLSTATE 3F000, 42P01) is
 * `SchemaNotMigratedError`.
 * A serialization failure or deadlock that outlived slonik's own retries is transient too: the
 * work rolled back, and the caller may retry with the same key.
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof ChargeOnceError) return error;
  if (isStoreUnavailable(error) || isRetryableStoreError(error)) {
    return new StoreUnavailableError({ cause: error });
  }
  const missing = missingSchemaOf(error);
  if (missing) return new SchemaNotMigratedError(missing.schema, { cause: error });
  return error;
}

/**
 * Runs one store operation, translating connection loss into `StoreUnavailableError` and an
 * unmigrated schema into `SchemaNotMigratedError`.
 */
export function withStore<T>(operation: () => Promise<T>): Promise<T> {
  // A promise chain, not an async function: the hot path's two statements run through here, and
  // an async frame would cost each of them a promise more when promise hooks are on.
  try {
    return operation().then(undefined, throwAsStoreError);
  } catch (error) {
    return rejected(toStoreError(error));
  }
}

function throwAsStoreError(error: unknown): never {
  throw toStoreError(error);
}
