import { parseArgs } from 'node:util';
import { DESIGN_NAMES, type DesignName } from './Design.js';
import { SCENARIOS, type ScenarioName } from './BenchResults.js';

/** How much to run. */
export type BenchOptions = {
  mode: 'full' | 'quick';
  rounds: number;
  concurrencies: number[];
  freshCalls: number;
  /** Completed charges each design's tables hold at the start of a round (see emptyTables). */
  baselineCharges: number;
  replayCalls: number;
  replayKeys: number;
  stormKeys: number;
  stormCallersPerKey: number;
  sweepKeys: number;
  /** Connections in each design's pool, the same for all: `createEnginePool`'s default. */
  poolSize: number;
  designs: DesignName[];
  scenarios: ScenarioName[];
  sweep: boolean;
  /** Fresh refunds against fresh charges, engine only. */
  refunds: boolean;
  /** A run of every design and scenario: only such a run may write BENCHMARKS.md. */
  complete: boolean;
  note: string | null;
  /** `--base REV`: the commit whose engine runs as `engine-base`; null without it. */
  base: string | null;
};

/** Designs that measure one part of another's cost: run only when `--designs` names them. */
const NAMED_ONLY: ReadonlySet<DesignName> = new Set([
  'engine-bookkeeping',
  'engine-otel-sampled',
  'engine-hooks',
]);

export const USAGE = `Usage: npm run bench -- [--quick] [--rounds N] [--designs engine,floor,...]
                       [--scenarios fresh,replay,storm,sweep,refund] [--note TEXT]
                       [--base REV]

  --quick      a smaller run (about a minute) written to .bench/ only
  --rounds N   rounds of every measurement, designs alternating (default 5; quick 3)
  --designs    only these of engine, engine-otel, engine-wait, floor, floor-slonik, naive,
               naive-slonik, engine-base, and, only when named, engine-bookkeeping (telemetry
               on, a meter that records nothing: chargeonce's own part) and engine-otel-sampled
               (engine-otel with one trace in ten) and engine-hooks (a reserve hook on every
               call) (e.g. to profile one with --cpu-prof);
               .bench/ only
  --base REV   also run the engine of commit REV (a git worktree under .bench/) as
               engine-base, side by side with this one: is a change no slower? .bench/ only
  --scenarios  only these scenarios; .bench/ only
  --note TEXT  a sentence about the run for the report, e.g. that the machine was shared`;

// Full: the storm (200 keys) and sweep (10,000 keys); fresh and replay sizes give each run
// about a second or more, so five rounds take about ten minutes on two cores. Replays answer
// fastest: at 2,000 a run at 32 callers lasted about a tenth of a second, and the engine's ratio
// to the floor there read anywhere from 1.23 to 1.55 from one full run to the next.
const SIZES = {
  full: {
    rounds: 5,
    freshCalls: 1_000,
    baselineCharges: 20_000,
    replayCalls: 8_000,
    replayKeys: 500,
    stormKeys: 200,
    sweepKeys: 10_000,
  },
  // A smoke run: every path once per round, three rounds, within a minute on a busy 2-core box.
  quick: {
    rounds: 3,
    freshCalls: 60,
    baselineCharges: 2_000,
    replayCalls: 150,
    replayKeys: 30,
    stormKeys: 4,
    sweepKeys: 500,
  },
} as const;

/** @throws {Error} with the usage text for an unknown or malformed argument. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgsOrUsage(argv);
  if (values.help) throw new Error(USAGE);
  const mode = values.quick ? 'quick' : 'full';
  const size = SIZES[mode];
  const rounds = values.rounds === undefined ? size.rounds : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds must be a positive integer\n${USAGE}`);
  const base = values.base ?? null;
  // `engine-base` runs only with `--base`, and by default then; the others of NAMED_ONLY only
  // when named.
  const designs = pick(values.designs, DESIGN_NAMES, '--designs').filter(
    (name) =>
      (name !== 'engine-base' || base !== null) &&
      (!NAMED_ONLY.has(name) || values.designs !== undefined),
  );
  if (base !== null && !designs.includes('engine-base')) designs.splice(1, 0, 'engine-base');
  if (base !== null && !designs.includes('engine')) {
    throw new Error(`--base compares with the engine: keep engine in --designs\n${USAGE}`);
  }
  const scenarioNames = pick(
    values.scenarios,
    [...SCENARIOS, 'sweep', 'refund'] as const,
    '--scenarios',
  );
  const scenarios = scenarioNames.filter((s): s is ScenarioName => s !== 'sweep' && s !== 'refund');
  const sweep = scenarioNames.includes('sweep') && designs.includes('engine');
  const refunds = scenarioNames.includes('refund') && designs.includes('engine');
  return {
    mode,
    rounds,
    concurrencies: [1, 8, 32],
    freshCalls: size.freshCalls,
    baselineCharges: size.baselineCharges,
    replayCalls: size.replayCalls,
    replayKeys: size.replayKeys,
    stormKeys: size.stormKeys,
    stormCallersPerKey: 32,
    sweepKeys: size.sweepKeys,
    poolSize: 10,
    designs,
    scenarios,
    sweep,
    refunds,
    complete:
      values.designs === undefined &&
      values.scenarios === undefined &&
      base === null &&
      rounds >= 3,
    note: values.note ?? null,
    base,
  };
}

function pick<T extends string>(list: string | undefined, all: readonly T[], flag: string): T[] {
  if (list === undefined) return [...all];
  const chosen = list.split(',').map((s) => s.trim());
  const unknown = chosen.filter((s) => !(all as readonly string[]).includes(s));
  if (unknown.length > 0 || chosen.length === 0) {
    throw new Error(
      `${flag}: unknown ${unknown.join(', ')}; choose from ${all.join(', ')}\n${USAGE}`,
    );
  }
  return all.filter((name) => chosen.includes(name));
}

function parseArgsOrUsage(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        quick: { type: 'boolean', default: false },
        rounds: { type: 'string' },
        designs: { type: 'string' },
        scenarios: { type: 'string' },
        note: { type: 'string' },
        base: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
}
