import { ChargeOnceError, SchemaNotMigratedError } from '../errors.js';
import { DEFAULT_SCHEMA } from '../store/tables.js';
import { UsageError } from './parseCommandArgs.js';

/** How many causes are followed at most: chains are short; a longer one is cut, not looped. */
const MAX_CAUSES = 8;

/**
 * An error as the command prints it: the error itself, then each `cause` under it, so that
 * "store unavailable" also says why (`connect ECONNREFUSED 127.0.0.1:5432`, a SQLSTATE, …).
 */
export function describeError(error: unknown): string[] {
  return [describeOne(error), ...causesOf(error).map((e) => `  caused by: ${describeOne(e)}`)];
}

/** One error or cause under `--json`: its code when it has one, and what it says. */
export type ErrorJson = { code?: string; message: string };

/**
 * An error as the command prints it under `--json`: one object, `{ error: { code, message, … } }`.
 * `code` is a chargeonce error's code, `usage` for a wrong command line (with `help`, the command
 * that prints the usage), else the error's own code (`ERR_MODULE_NOT_FOUND`, …) or `error`. A
 * chargeonce error's own fields (`issues`, `schema`, …) come along; `causes` is the chain of
 * causes the text form prints as "caused by".
 */
export function errorJson(error: unknown): { error: ErrorJson & Record<string, unknown> } {
  if (error instanceof UsageError) {
    return { error: { code: 'usage', message: error.message, help: error.helpCommand } };
  }
  const causes = causesOf(error).map(oneJson);
  const { code = 'error', message } = oneJson(error);
  return {
    error: {
      code,
      message,
      ...(error instanceof ChargeOnceError ? ownFields(error) : {}),
      ...(causes.length === 0 ? {} : { causes }),
    },
  };
}

/** The causes under `error`, outermost first. */
function causesOf(error: unknown): unknown[] {
  const causes: unknown[] = [];
  const seen = new Set<unknown>([error]);
  for (let e = causeOf(error); e !== undefined && causes.length < MAX_CAUSES; e = causeOf(e)) {
    if (seen.has(e)) break;
    seen.add(e);
    causes.push(e);
  }
  return causes;
}

function causeOf(error: unknown): unknown {
  return error instanceof Error ? error.cause : undefined;
}

function describeOne(error: unknown): string {
  const { code, message } = oneJson(error);
  if (error instanceof ChargeOnceError) return `${error.code}: ${message}`;
  if (!(error instanceof Error)) return message;
  const tag = code !== undefined && !message.includes(code) ? ` [${code}]` : '';
  return `${message}${tag}`;
}

function oneJson(error: unknown): ErrorJson {
  if (error instanceof ChargeOnceError) return { code: error.code, message: messageOf(error) };
  if (!(error instanceof Error)) return { message: String(error) };
  // Node reports a refused connection to every address of a host as an AggregateError whose
  // own message may be empty: say what each attempt got.
  const parts =
    error instanceof AggregateError && error.errors.length > 0
      ? error.errors.map((inner) => (inner instanceof Error ? inner.message : String(inner)))
      : [];
  const message = [error.message, ...parts].filter((part) => part !== '').join('; ');
  const code = (error as { code?: unknown }).code;
  return {
    ...(typeof code === 'string' ? { code } : {}),
    message: message === '' ? error.name : message,
  };
}

/**
 * A chargeonce error's message, said for the command line: an unmigrated schema is fixed with
 * `chargeonce migrate`, not with the library's `migrate(pool)` that its message names.
 */
function messageOf(error: ChargeOnceError): string {
  if (!(error instanceof SchemaNotMigratedError)) return error.message;
  const schema = error.schema ?? DEFAULT_SCHEMA;
  const where = error.schema === undefined ? "chargeonce's schema" : `schema "${schema}"`;
  const command = `chargeonce migrate${schema === DEFAULT_SCHEMA ? '' : ` --schema ${schema}`}`;
  return `The database is not migrated: chargeonce's tables or columns are missing from ${where}. Run '${command}' on this database first.`;
}

/** What a chargeonce error carries besides its code and message: `issues`, `schema`, … */
function ownFields(error: ChargeOnceError): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(error)) {
    if (SHARED_FIELDS.has(name) || value === undefined) continue;
    try {
      // Only what JSON can carry as it is: a field it cannot is left out, not half-written.
      JSON.stringify(value);
      fields[name] = value;
    } catch {
      // left out
    }
  }
  return fields;
}

/** Every chargeonce error has these; the command line has no use for the HTTP status. */
const SHARED_FIELDS: ReadonlySet<string> = new Set(['name', 'code', 'httpStatus', 'message']);
