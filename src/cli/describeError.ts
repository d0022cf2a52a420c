import { ChargeOnceError } from '../errors.js';

/** How many causes are followed at most: chains are short; a longer one is cut, not looped. */
const MAX_CAUSES = 8;

/**
 * An error as the command prints it: the error itself, then each `cause` under it, so that
 * "store unavailable" also says why (`connect ECONNREFUSED 127.0.0.1:5432`, a SQLSTATE, …).
 */
export function describeError(error: unknown): string[] {
  const lines = [describeOne(error)];
  const seen = new Set<unknown>([error]);
  for (let e = causeOf(error); e !== undefined && lines.length <= MAX_CAUSES; e = causeOf(e)) {
    if (seen.has(e)) break;
    seen.add(e);
    lines.push(`  caused by: ${describeOne(e)}`);
  }
  return lines;
}

function causeOf(error: unknown): unknown {
  return error instanceof Error ? error.cause : undefined;
}

function describeOne(error: unknown): string {
  if (error instanceof ChargeOnceError) return `${error.code}: ${error.message}`;
  if (!(error instanceof Error)) return String(error);
  // Node reports a refused connection to every address of a host as an AggregateError whose
  // own message may be empty: say what each attempt got.
  const parts =
    error instanceof AggregateError && error.errors.length > 0
      ? error.errors.map((inner) => (inner instanceof Error ? inner.message : String(inner)))
      : [];
  const message = [error.message, ...parts].filter((part) => part !== '').join('; ');
  const code = (error as { code?: unknown }).code;
  const tag = typeof code === 'string' && !message.includes(code) ? ` [${code}]` : '';
  return `${message === '' ? error.name : message}${tag}`;
}
