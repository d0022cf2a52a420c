import { createChargeEngine, type ChargeEngine } from '../engine/createChargeEngine.js';
import type { ChargeHooks } from '../engine/types.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import { RECOVERY_POINTS, type RecoveryPoint } from '../store/keyState.js';
import { migrate } from '../store/migrate.js';
import { MAX_PAGE_SIZE } from '../admin/listKeys.js';
import { KeyNotResolvableError } from '../admin/KeyNotResolvableError.js';
import type { KeySummary, ResolveInput, ResolveResult } from '../admin/types.js';
import { renderInspection, renderKeyList, type Rendering } from './adminRender.js';
import { databaseUrlOption } from './databaseUrlOption.js';
import { ADMIN_USAGE } from './adminUsage.js';
import { loadProvider } from './loadProvider.js';
import { parseCommandArgs, UsageError } from './parseCommandArgs.js';

/** The commands of the admin surface, each parsing its own options. */
export const ADMIN_COMMANDS: ReadonlySet<string> = new Set([
  'migrate',
  'inspect',
  'list',
  'resolve',
  'requeue',
]);

type AdminCommand = 'migrate' | 'inspect' | 'list' | 'resolve' | 'requeue';

/** Where a command writes: its lines, progress (a terminal only) and hints that are not data. */
export type AdminOutput = {
  print: (line: string) => void;
  /** Notes for a person (the next page's cursor when piped, progress): never on stdout's data. */
  note: (text: string) => void;
  rendering: Rendering;
};

const OPTIONS = {
  'database-url': { type: 'string' },
  schema: { type: 'string' },
  operation: { type: 'string' },
  merchant: { type: 'string' },
  key: { type: 'string' },
  point: { type: 'string' },
  'older-than-ms': { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  all: { type: 'boolean', default: false },
  outcome: { type: 'string' },
  'provider-charge-id': { type: 'string' },
  'decline-code': { type: 'string' },
  'provider-refund-id': { type: 'string' },
  'provider-capture-id': { type: 'string' },
  'failure-code': { type: 'string' },
  actor: { type: 'string' },
  reason: { type: 'string' },
  provider: { type: 'string' },
  'no-hooks': { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'];

/** Which options each command takes, besides --database-url, --schema, --json and --help. */
const ACCEPTS: Record<AdminCommand, ReadonlyArray<keyof typeof OPTIONS>> = {
  migrate: [],
  inspect: ['merchant', 'key', 'operation'],
  list: ['point', 'merchant', 'operation', 'older-than-ms', 'limit', 'cursor', 'all'],
  resolve: [
    'merchant',
    'key',
    'operation',
    'outcome',
    'provider-charge-id',
    'decline-code',
    'provider-refund-id',
    'provider-capture-id',
    'failure-code',
    'actor',
    'reason',
    'provider',
    'no-hooks',
  ],
  requeue: ['merchant', 'key', 'operation', 'actor', 'reason'],
};
const COMMON = new Set<string>(['database-url', 'schema', 'json', 'help']);

/** A provider for commands that never call one: the admin surface only reads and records. */
const noProvider: PaymentProvider = {
  createCharge: () => Promise.reject(new Error('admin commands do not charge')),
  findCharge: () => Promise.reject(new Error('admin commands do not look charges up')),
};

/** The output of a command run by `cli.ts`: stdout, stderr, and whether stdout is a terminal. */
export function processOutput(print: (line: string) => void): AdminOutput {
  const tty = process.stdout.isTTY === true;
  return {
    print,
    note: (text) => process.stderr.write(text),
    rendering: { tty, columns: process.stdout.columns || 120 },
  };
}

/**
 * Runs one admin command (`migrate`, `inspect`, `list`, `resolve`, `requeue`) and returns its
 * exit code: 0 done, 1 nothing matched (inspect, requeue).
 *
 * @throws {UsageError} bad options; nothing ran.
 */
export async function adminCommand(
  command: string,
  args: string[],
  output: AdminOutput,
): Promise<number> {
  if (!ADMIN_COMMANDS.has(command)) throw new UsageError(`unknown command ${command}`, undefined);
  const name = command as AdminCommand;
  const { values } = parseCommandArgs(args, OPTIONS, { command: name });
  if (values.help) {
    output.print(ADMIN_USAGE[name].trimEnd());
    return 0;
  }
  for (const [option, value] of Object.entries(values)) {
    // Booleans come back with their default (false) when not given.
    if (value === false || COMMON.has(option)) continue;
    if (!(ACCEPTS[name] as readonly string[]).includes(option)) {
      throw new UsageError(`${name} takes no --${option}`, name);
    }
  }
  const databaseUrl = databaseUrlOption(values['database-url'], name);
  if (name === 'migrate') {
    const result = await migrate(databaseUrl, values.schema ? { schema: values.schema } : {});
    output.print(
      values.json
        ? JSON.stringify(result)
        : `schema at version ${result.currentVersion}; applied: ${result.applied.length === 0 ? 'none' : result.applied.join(', ')}`,
    );
    return 0;
  }
  const hooks = name === 'resolve' ? await resolveHooks(values) : undefined;
  const engine = createChargeEngine({
    pool: databaseUrl,
    provider: noProvider,
    ...(values.schema ? { schema: values.schema } : {}),
    ...(hooks ? { hooks } : {}),
  });
  try {
    switch (name) {
      case 'inspect':
        return await inspect(engine, values, output);
      case 'list':
        return await list(engine, values, output);
      case 'resolve':
        return await resolve(engine, values, output);
      case 'requeue':
        return await requeue(engine, values, output);
    }
  } finally {
    await engine.close();
  }
}

function required(
  values: Values,
  option: 'merchant' | 'key' | 'outcome' | 'actor' | 'reason',
  command: AdminCommand,
): string {
  const value = values[option];
  if (value === undefined || value === '')
    throw new UsageError(`${command} needs --${option}`, command);
  return value;
}

function target(values: Values, command: AdminCommand) {
  return {
    merchantId: required(values, 'merchant', command),
    key: required(values, 'key', command),
    ...(values.operation === undefined ? {} : { operation: values.operation }),
  };
}

/**
 * An integer option checked as the engine checks it (`rule`), refused before anything runs with
 * the rule's own words (`--limit must be an integer from 1 to 1000, got 0`).
 */
function integerOption(
  values: Values,
  option: 'limit' | 'older-than-ms',
  command: AdminCommand,
  rule: { min: number; max: number; says: string },
): number | undefined {
  const value = values[option];
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < rule.min || n > rule.max) {
    throw new UsageError(`--${option} must be ${rule.says}, got ${value}`, command);
  }
  return n;
}

/** `list --limit`: a page size `engine.list` takes. */
const LIMIT_RULE = {
  min: 1,
  max: MAX_PAGE_SIZE,
  says: `an integer from 1 to ${MAX_PAGE_SIZE}`,
};

/** `list --older-than-ms`: an age `engine.list` takes (`olderThan`). */
const OLDER_THAN_RULE = {
  min: 0,
  max: Number.MAX_SAFE_INTEGER,
  says: 'a non-negative integer of milliseconds',
};

async function inspect(engine: ChargeEngine, values: Values, output: AdminOutput) {
  const t = target(values, 'inspect');
  const found = await engine.inspect(t);
  if (values.json) output.print(JSON.stringify(found));
  else if (found === null) {
    output.print(`no such key: ${describeTarget(t)}${await elsewhere(engine, t)}`);
  } else for (const line of renderInspection(found, output.rendering)) output.print(line);
  return found === null ? 1 : 0;
}

/** A page size when none is given: a screenful. */
const DEFAULT_LIMIT = 50;

async function list(engine: ChargeEngine, values: Values, output: AdminOutput) {
  const point = values.point;
  if (point !== undefined && !(RECOVERY_POINTS as readonly string[]).includes(point)) {
    throw new UsageError(`--point must be one of ${RECOVERY_POINTS.join(', ')}`, 'list');
  }
  const olderThan = integerOption(values, 'older-than-ms', 'list', OLDER_THAN_RULE);
  const limit = integerOption(values, 'limit', 'list', LIMIT_RULE) ?? DEFAULT_LIMIT;
  const options = {
    limit,
    ...(point === undefined ? {} : { point: point as RecoveryPoint }),
    ...(values.merchant === undefined ? {} : { merchantId: values.merchant }),
    ...(values.operation === undefined ? {} : { operation: values.operation }),
    ...(olderThan === undefined ? {} : { olderThan }),
  };
  let cursor = values.cursor ?? null;
  const keys: KeySummary[] = [];
  for (;;) {
    const page = await engine.list({ ...options, cursor });
    keys.push(...page.keys);
    cursor = page.nextCursor;
    if (!values.all || cursor === null) break;
    // Every page, on a terminal only: a pipe gets the keys and nothing else.
    if (output.rendering.tty) output.note(`\r\x1b[2Klisted ${keys.length} keys…`);
  }
  if (values.all && output.rendering.tty) output.note('\r\x1b[2K');
  if (values.json) {
    output.print(JSON.stringify({ keys, nextCursor: cursor }));
    return 0;
  }
  for (const line of renderKeyList(keys, output.rendering)) output.print(line);
  if (cursor !== null) {
    const hint = `more keys: --cursor ${cursor}`;
    if (output.rendering.tty) output.print(hint);
    else output.note(`${hint}\n`);
  }
  return 0;
}

/** Each resolve option that is given, under the name `engine.resolve` takes it. */
const RESOLVE_FIELDS = {
  'provider-charge-id': 'providerChargeId',
  'decline-code': 'declineCode',
  'provider-refund-id': 'providerRefundId',
  'provider-capture-id': 'providerCaptureId',
  'failure-code': 'failureCode',
} as const;

async function resolve(engine: ChargeEngine, values: Values, output: AdminOutput) {
  const given: Record<string, string> = {};
  for (const [option, field] of Object.entries(RESOLVE_FIELDS)) {
    const value = values[option as keyof typeof RESOLVE_FIELDS];
    if (value !== undefined) given[field] = value;
  }
  const t = target(values, 'resolve');
  // The engine checks the outcome and the fields against the key's kind, and names what is wrong.
  const input = {
    ...t,
    outcome: required(values, 'outcome', 'resolve'),
    actor: required(values, 'actor', 'resolve'),
    reason: required(values, 'reason', 'resolve'),
    ...given,
  } as ResolveInput;
  const result = await engine.resolve(input).catch(async (error: unknown) => {
    // As inspect and requeue say it: a refund's key resolved without `--operation refund`. The
    // refusal is what the command reports; a failed lookup of the hint only loses the hint.
    if (!values.json && error instanceof KeyNotResolvableError && error.reason === 'no_such_key') {
      const hint = await elsewhere(engine, t).catch(() => '');
      if (hint !== '') output.note(`chargeonce: ${describeTarget(t)}${hint}\n`);
    }
    throw error;
  });
  const { outcome, audit } = result;
  if (values.json) {
    // What engine.resolve returned, its `kind` included.
    output.print(JSON.stringify(result));
  } else {
    output.print(
      `resolved: ${describeTarget(t)} ${outcome.status} (HTTP ${outcome.httpStatus}, ${describeResolved(result)}) by ${audit.actor ?? '-'}`,
    );
  }
  return 0;
}

/** What a resolve stored, by kind: the local id, and the provider's when there is one. */
function describeResolved(result: ResolveResult): string {
  switch (result.kind) {
    case 'charge': {
      const { chargeId, providerChargeId } = result.outcome;
      return `charge ${chargeId}${providerChargeId === null ? '' : `, provider charge ${providerChargeId}`}`;
    }
    case 'refund': {
      const { refundId, chargeId, providerRefundId } = result.outcome;
      return `refund ${refundId} of charge ${chargeId}${providerRefundId === null ? '' : `, provider refund ${providerRefundId}`}`;
    }
    case 'capture': {
      const { captureId, chargeId, providerCaptureId } = result.outcome;
      return `capture ${captureId} of charge ${chargeId}${providerCaptureId === null ? '' : `, provider capture ${providerCaptureId}`}`;
    }
  }
}

async function requeue(engine: ChargeEngine, values: Values, output: AdminOutput) {
  const t = target(values, 'requeue');
  // Required by the engine too: the options are named here so a usage error says which is missing.
  const requeued = await engine.requeue({
    ...t,
    actor: required(values, 'actor', 'requeue'),
    reason: required(values, 'reason', 'requeue'),
  });
  const what = describeTarget(t);
  if (values.json) output.print(JSON.stringify({ requeued }));
  else if (requeued) output.print(`requeued: ${what}`);
  else output.print(`not requeued: no failed key ${what}${await elsewhere(engine, t)}`);
  return requeued ? 0 : 1;
}

/** The operations a key of a merchant may be under, besides a custom one of the engine's. */
const KNOWN_OPERATIONS = ['charge', 'refund', 'capture'] as const;

/**
 * Where a key not found under its operation is, among the built-in ones: a refund's key looked
 * up without `--operation refund` reads as no such key otherwise. Empty when it is under none.
 */
async function elsewhere(
  engine: ChargeEngine,
  t: { merchantId: string; key: string; operation?: string },
): Promise<string> {
  const asked = t.operation ?? 'charge';
  for (const operation of KNOWN_OPERATIONS) {
    if (operation === asked) continue;
    const found = await engine.inspect({ ...t, operation });
    if (found) return ` (there is one under --operation ${operation}, at ${found.recoveryPoint})`;
  }
  return '';
}

/** `merchant [operation] key`, the operation only when given. */
function describeTarget(t: { merchantId: string; key: string; operation?: string }): string {
  return [t.merchantId, t.operation, t.key].filter(Boolean).join(' ');
}

/**
 * The hooks `resolve` runs, from the module `sweep` loads (its named export `hooks`): a resolve
 * must run the `complete` or `cancel` hook as the engine would have. Without `--provider` the
 * person says so with `--no-hooks`, so hooks are never skipped by forgetting an option.
 */
async function resolveHooks(values: Values): Promise<ChargeHooks | undefined> {
  if (values.provider !== undefined && values['no-hooks']) {
    throw new UsageError('resolve takes --provider or --no-hooks, not both', 'resolve');
  }
  if (values.provider !== undefined) return (await loadProvider(values.provider)).hooks;
  if (values['no-hooks']) return undefined;
  throw new UsageError(
    'resolve needs --provider MODULE (whose `hooks` export it runs, as the sweeper would) or --no-hooks',
    'resolve',
  );
}
