import { InvalidConfigurationError } from '../errors.js';
import { loadChaosProvider, providerModuleUrl } from '../chaos/loadChaosProvider.js';
import {
  renderConformanceReport,
  runConformance,
  type ConformanceFixture,
} from '../conformance/runConformance.js';
import type { FakeServerFault } from '../provider/createFaultSchedule.js';
import { startFakeProviderServer } from '../provider/fakeProviderServer.js';
import { parseCommandArgs, UsageError } from './parseCommandArgs.js';

const USAGE = `Usage: chargeonce conformance --provider MODULE [options]

Runs a fixed battery of checks against your PaymentProvider adapter and prints a pass/fail
table: amounts and currencies echoed, dedupe on providerKey, findCharge after a lost answer
and for a key never charged, declines as outcomes, the AbortSignal honoured within the
budget, transient vs. permanent failures. Every check charges with fresh keys: point the
adapter at a sandbox or an emulator. Exits 0 only when no check fails.

The module (an ES module):
  default       ({ baseUrl }) => PaymentProvider, or a PaymentProvider; baseUrl is a fake
                provider server this command starts, without faults unless asked
  conformance   the fixture: { customerId, currencies?, decline?, hang?, transient?,
                permanent?, close? }, or a function ({ baseUrl, failNext }) => fixture, where
                failNext(fault) sets the fake server's next charge to hang,
                errorBeforeCharge, decline, malformed, …. A check whose hook is missing
                is skipped. close(), when present, is called at the end.

Options:
  --provider MODULE   the adapter module (required)
  --budget-ms MS      the abort check's budget (default: 500)
  --json              print the report as JSON
`;

/** The context a module's `conformance` function gets. */
export type ConformanceContext = {
  /** The fake provider server started for this run. */
  baseUrl: string;
  /** Sets the fake server's next charge to `fault`. */
  failNext: (fault: FakeServerFault) => void;
};

/**
 * `chargeonce conformance`: loads the adapter module, runs the battery, prints the table.
 *
 * @throws {UsageError} no `--provider`, or a bad `--budget-ms`.
 * @throws {InvalidConfigurationError} a module that cannot be loaded or has no provider.
 * @throws {Error} a module without a fixture.
 */
export async function conformanceCommand(
  argv: string[],
  print: (line: string) => void,
): Promise<'help' | 'passed' | 'failed'> {
  const { values } = parseCommandArgs(
    argv,
    {
      provider: { type: 'string' },
      'budget-ms': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    { command: 'conformance' },
  );
  if (values.help) {
    print(USAGE);
    return 'help';
  }
  if (!values.provider) throw new UsageError('conformance needs --provider MODULE', 'conformance');
  const budgetText = values['budget-ms'];
  const budgetMs = budgetText === undefined ? undefined : Number(budgetText);
  if (budgetMs !== undefined && !(Number.isSafeInteger(budgetMs) && budgetMs > 0)) {
    throw new UsageError(
      `--budget-ms must be a positive integer, got ${budgetText}`,
      'conformance',
    );
  }

  const server = await startFakeProviderServer({ latencyMs: { min: 0, max: 0 } });
  try {
    const moduleUrl = providerModuleUrl(values.provider);
    const { provider } = await loadChaosProvider(moduleUrl, server.url, values.provider);
    const module = (await import(moduleUrl)) as { conformance?: unknown };
    const context: ConformanceContext = {
      baseUrl: server.url,
      failNext: (fault) => server.failNext(fault),
    };
    const exported = module.conformance;
    const fixture: unknown =
      typeof exported === 'function'
        ? await (exported as (c: ConformanceContext) => unknown)(context)
        : exported;
    if (!isFixture(fixture)) {
      // A module that exports no fixture is refused as configuration (exit 2): nothing ran.
      throw new InvalidConfigurationError(
        `${values.provider} must export \`conformance\`: { customerId, … } or ({ baseUrl, failNext }) => { customerId, … }`,
      );
    }
    const report = await runConformance({
      provider,
      fixture,
      ...(budgetMs === undefined ? {} : { budgetMs }),
    }).finally(() => fixture.close?.());
    if (values.json) print(JSON.stringify(report, null, 2));
    else renderConformanceReport(report).forEach((line) => print(line));
    return report.ok ? 'passed' : 'failed';
  } finally {
    await server.close();
  }
}

function isFixture(value: unknown): value is ConformanceFixture {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ConformanceFixture).customerId === 'string'
  );
}
