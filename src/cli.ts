#!/usr/bin/env node
import { adminCommand, ADMIN_COMMANDS, processOutput } from './cli/adminCommands.js';
import { chaosCommand } from './cli/chaosCommand.js';
import { conformanceCommand } from './cli/conformanceCommand.js';
import { databaseUrlOption } from './cli/databaseUrlOption.js';
import { packageVersion } from './cli/packageVersion.js';
import { parseCommandArgs, UsageError } from './cli/parseCommandArgs.js';
import {
  reapCommand,
  statusCommand,
  sweepCommand,
  type RecoveryCommandOptions,
} from './cli/recoveryCommands.js';
import { renderError, wantsJson } from './cli/reportError.js';
import { InvalidConfigurationError, InvalidRequestError } from './errors.js';

const USAGE = `Usage: chargeonce <command> [options]

Commands:
  sweep    finish abandoned charges of one operation (needs --provider)
  reap     reap completed keys older than the retention to tombstones, and delete
           tombstones older than theirs (every operation)
  status   keys per recovery point, abandoned and stuck keys (every operation)
  migrate  create or upgrade chargeonce's schema
  inspect  everything stored about one key: point, request, lease, charge, outcome,
           history, audit trail (needs --merchant and --key)
  list     keys page by page, filtered by --point, --merchant, --operation,
           --older-than-ms
  resolve  complete a key parked in failed with what the provider says (audited)
  requeue  put a key parked in failed back for the sweeper (needs --merchant, --key,
           --actor and --reason; audited); exits 1 when no failed key matched
           (options of these five: chargeonce <command> --help)
  chaos    charge through crashes, kills and provider faults, then reconcile
           (options: chargeonce chaos --help)
  conformance
           run a fixed battery of checks against your provider adapter
           (options: chargeonce conformance --help)

Options:
  --database-url URL     PostgreSQL (default: $DATABASE_URL)
  --schema NAME          chargeonce's schema (default: chargeonce)
  --operation NAME       sweep, requeue: the operation whose keys to take (default: charge)
  --merchant ID          requeue: the key's merchant
  --key KEY              requeue: the idempotency key
  --limit N              at most N keys (sweep, reap) or N stuck keys listed (status)
  --provider MODULE      sweep: module whose default export is your PaymentProvider
  --on-abandoned MODE    sweep: cancel (default) or complete
  --grace-ms MS          sweep: idle time before a key counts as abandoned (default 30000)
  --max-attempts N       sweep: sweeps of a key before it is parked as failed (default 5)
  --retention-ms MS      reap: keep completed keys this long (default 72 h)
  --tombstone-retention-ms MS
                         reap: keep tombstones this long after completion (default 30 days,
                         or ten times --retention-ms if longer); use your engine's setting
  --json                 print JSON
  -h, --help             print this help (or: chargeonce <command> --help)
  -v, --version          print chargeonce's version

Exit status: 0 done; 1 failed, or (inspect, requeue, resolve) no such key to act on;
2 a wrong command line, or a value refused as input or configuration (a --provider
module that cannot be loaded too): nothing ran.
`;

/**
 * An integer option's value, at least `least`: a duration may be 0, a count of keys may not
 * (the engine refuses a `limit` under 1).
 */
function numberOption(value: string | undefined, name: string, least = 0): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < least) {
    const rule = least === 0 ? 'a non-negative integer' : `an integer from ${least} up`;
    throw new UsageError(`--${name} must be ${rule}, got ${value}`, undefined);
  }
  return n;
}

async function main(argv: string[]): Promise<number> {
  const print = (line: string) => process.stdout.write(`${line}\n`);
  // `chaos` has options of its own and parses them itself.
  if (argv[0] === 'chaos') {
    return (await chaosCommand(argv.slice(1), print)) === 'failed' ? 1 : 0;
  }
  if (argv[0] === 'conformance') {
    return (await conformanceCommand(argv.slice(1), print)) === 'failed' ? 1 : 0;
  }
  // The admin commands (migrate, inspect, list, resolve, requeue) parse their options too.
  if (argv[0] !== undefined && ADMIN_COMMANDS.has(argv[0])) {
    return adminCommand(argv[0], argv.slice(1), processOutput(print));
  }
  // A mistyped command first: its options would otherwise be judged by another's rules.
  if (argv[0] !== undefined && !argv[0].startsWith('-') && !RECOVERY_COMMANDS.has(argv[0])) {
    return unknownCommand(argv[0], argv.includes('--json'));
  }
  const { positionals, values } = parseCommandArgs(
    argv,
    {
      'database-url': { type: 'string' },
      schema: { type: 'string' },
      operation: { type: 'string' },
      merchant: { type: 'string' },
      key: { type: 'string' },
      limit: { type: 'string' },
      provider: { type: 'string' },
      'on-abandoned': { type: 'string' },
      'grace-ms': { type: 'string' },
      'max-attempts': { type: 'string' },
      'retention-ms': { type: 'string' },
      'tombstone-retention-ms': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      version: { type: 'boolean', short: 'v', default: false },
    },
    { allowPositionals: true },
  );
  if (values.version) {
    print(values.json ? JSON.stringify({ version: packageVersion() }) : packageVersion());
    return 0;
  }
  const command = positionals[0];
  if (values.json && !values.help && !command) {
    process.stderr.write(renderError(new UsageError('no command given', undefined), true));
    return 2;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!command) {
    // A wrong command line: the usage goes where errors go, stdout stays empty for a pipe.
    process.stderr.write(USAGE);
    return 2;
  }
  // Before any option is checked: a mistyped command is what the user needs to hear about.
  if (!RECOVERY_COMMANDS.has(command)) return unknownCommand(command, values.json);
  // sweep, reap and status take no argument of their own: a stray one is a mistyped option.
  if (positionals.length > 1) {
    throw new UsageError(`unexpected argument '${positionals[1]}'`, undefined);
  }
  const databaseUrl = databaseUrlOption(values['database-url'], undefined);
  const onAbandoned = values['on-abandoned'];
  if (onAbandoned !== undefined && onAbandoned !== 'cancel' && onAbandoned !== 'complete') {
    throw new UsageError('--on-abandoned must be cancel or complete', undefined);
  }
  // Narrowed above; TypeScript keeps `string` through the spread below without this.
  const abandonedMode: 'cancel' | 'complete' | undefined = onAbandoned;
  if (values.operation !== undefined && (command === 'reap' || command === 'status')) {
    throw new UsageError(
      `--operation applies to sweep and requeue; ${command} covers every operation`,
      undefined,
    );
  }
  const options: RecoveryCommandOptions = {
    databaseUrl,
    ...(values.schema ? { schema: values.schema } : {}),
    ...(values.operation ? { operation: values.operation } : {}),
    limit: numberOption(values.limit, 'limit', 1),
    ...(values.provider ? { providerModule: values.provider } : {}),
    ...(abandonedMode ? { onAbandoned: abandonedMode } : {}),
    graceMs: numberOption(values['grace-ms'], 'grace-ms'),
    maxAttempts: numberOption(values['max-attempts'], 'max-attempts'),
    retentionMs: numberOption(values['retention-ms'], 'retention-ms'),
    tombstoneRetentionMs: numberOption(values['tombstone-retention-ms'], 'tombstone-retention-ms'),
    json: values.json,
  };
  switch (command) {
    case 'sweep':
      await sweepCommand(options, print);
      return 0;
    case 'reap':
      await reapCommand(options, print);
      return 0;
    case 'status':
      await statusCommand(options, print);
      return 0;
    default:
      return unknownCommand(command, values.json);
  }
}

/** The commands `main` runs itself, after the ones that parse their own options. */
const RECOVERY_COMMANDS = new Set(['sweep', 'reap', 'status']);

/** A command chargeonce does not have: said on stderr with the usage (or as JSON), exit 2. */
function unknownCommand(command: string, json: boolean): number {
  process.stderr.write(
    json
      ? renderError(new UsageError(`unknown command ${command}`, undefined), true)
      : `Unknown command: ${command}\n\n${USAGE}`,
  );
  return 2;
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // Under --json one JSON object, an error in the options themselves included.
    process.stderr.write(renderError(error, wantsJson(argv)));
    // A wrong command line (nothing ran) is told apart from a failure: 2, as for no command. A
    // value the engine refused as input (a merchant id with a space at an edge, a forged cursor)
    // or as configuration (a bad --schema, --operation or retention) is one.
    process.exitCode =
      error instanceof UsageError ||
      error instanceof InvalidRequestError ||
      error instanceof InvalidConfigurationError
        ? 2
        : 1;
  },
);
