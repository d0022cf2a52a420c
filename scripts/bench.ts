// `npm run bench`: the engine against the floor (the least database work a correct design must
// do, on node-postgres prepared statements) and against the naive phased design of the seed
// articles, each also on slonik, side by side in one run. Writes BENCHMARKS.md (a complete full
// run only) and .bench/results*.json. See parseBenchOptions for the flags and BENCHMARKS.md for
// the method.
import { mkdir, writeFile } from 'node:fs/promises';
import { loadBaseEngine } from './bench/baseEngine.js';
import { createBenchDatabase, emptyTables, migrateSchemas } from './bench/benchDatabase.js';
import type {
  BenchResults,
  Measurement,
  RefundSample,
  ScenarioName,
  Sample,
  SweepSample,
} from './bench/BenchResults.js';
import type { ChargeEngine } from '../src/index.js';
import { createBenchProvider, type BenchProvider } from './bench/createBenchProvider.js';
import { applicationNameOf, createDesigns, endDesigns } from './bench/createDesigns.js';
import { createEngineDesign } from './bench/createEngineDesign.js';
import {
  cpuBetweenUs,
  createServerCpuMeter,
  type ServerCpuMeter,
} from './bench/createServerCpuMeter.js';
import { createSlonikPool } from './bench/createSlonikPool.js';
import { DESIGN_SCHEMAS, runDuring, type Design, type DesignName } from './bench/Design.js';
import { describeMachine } from './bench/describeMachine.js';
import { engineOverFloor } from './bench/engineOverFloor.js';
import { evaluateTargets, targetStatus } from './bench/evaluateTargets.js';
import { measureBatchedRoundTrips } from './bench/measureBatchedRoundTrips.js';
import { measureRoundTrips } from './bench/measureRoundTrips.js';
import { parseBenchOptions, type BenchOptions } from './bench/parseBenchOptions.js';
import { renderReport } from './bench/renderReport.js';
import { runFresh } from './bench/runFresh.js';
import { runReplays, seedReplayKeys, type SeededKey } from './bench/runReplays.js';
import { runStorm } from './bench/runStorm.js';
import { runSweep } from './bench/runSweep.js';
import { measureRefundRoundTrips, runRefundPair } from './bench/runRefunds.js';
import { sourceVersion } from './bench/sourceVersion.js';
import { withApplicationName } from './bench/withApplicationName.js';
import { startDatabase } from './support/database.js';

const ROOT = new URL('../', import.meta.url);

let options: BenchOptions;
try {
  options = parseBenchOptions(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
}

if (options.base !== null) await loadBaseEngine(options.base);
const startedAt = new Date();
const server = await startDatabase();
const database = await createBenchDatabase(server.url);
// The bench's own queries (migrations, emptying tables, describing the server, seeding the
// sweep) go through a small pool of their own, never through a measured design's.
const admin = await createSlonikPool(database.url, 2);
const provider = createBenchProvider();
let designs: Design[] = [];
let sweeper: Awaited<ReturnType<typeof createEngineDesign>> | null = null;
let meter: ServerCpuMeter | null = null;
try {
  await migrateSchemas(admin);
  designs = await createDesigns(database.url, options.designs, options.poolSize, provider);
  if (options.sweep) {
    const url = withApplicationName(database.url, 'chargeonce-bench-sweeper');
    sweeper = await createEngineDesign(
      { url, poolSize: options.poolSize, schema: DESIGN_SCHEMAS.engine },
      provider,
    );
  }
  meter = await createServerCpuMeter(database.url);
  const machine = await describeMachine(admin, server.source, options.note);
  console.log(
    `bench (${options.mode}): ${machine.cpuCount} × ${machine.cpuModel}, Node ${machine.node}, ${machine.postgres} (${machine.postgresSource}), load/core ${machine.loadPerCoreAtStart}`,
  );
  console.log(
    `PostgreSQL CPU per call: ${meter.source === null ? `n/a (${meter.unavailableBecause ?? 'not measured'})` : `the design's backends, from ${meter.source}`}`,
  );

  const roundTrips = await measureRoundTrips(database.url, provider, options.designs);
  console.log('round trips per call (fresh / replay):');
  for (const [name, wire] of Object.entries(roundTrips ?? {})) {
    console.log(`  ${name.padEnd(12)} ${wire.fresh.roundTrips} / ${wire.replay.roundTrips}`);
  }

  const batchedRoundTrips = await measureBatchedRoundTrips(
    database.url,
    provider,
    options.designs,
    options.poolSize,
    options.concurrencies.filter((c) => c > 1),
  );
  for (const wire of batchedRoundTrips ?? []) {
    console.log(
      `  ${wire.design.padEnd(12)} c${wire.concurrency}: ${wire.fresh.roundTrips.toFixed(2)} / ${wire.replay.roundTrips.toFixed(2)} (mean batch ${(2 / wire.fresh.roundTrips).toFixed(1)} / ${(1 / wire.replay.roundTrips).toFixed(1)})`,
    );
  }

  const engineDesign: (Design & { engine?: ChargeEngine }) | undefined = designs.find(
    (d) => d.name === 'engine',
  );
  const refundEngine = options.refunds ? engineDesign?.engine : undefined;
  const refundRoundTrips = refundEngine
    ? await measureRefundRoundTrips(database.url, DESIGN_SCHEMAS.engine, provider)
    : null;
  if (refundRoundTrips) {
    console.log(
      `  refund       ${refundRoundTrips.fresh.roundTrips} / ${refundRoundTrips.replay.roundTrips}`,
    );
  }

  await warmUp(designs, provider);
  if (refundEngine) {
    await runRefundPair(refundEngine, provider, { calls: 50, concurrency: 8 });
  }
  const refunds: RefundSample[] = [];
  const samples: Sample[] = [];
  const sweep: SweepSample[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    await emptyTables(admin, options.baselineCharges);
    provider.forget();
    // Replays at every concurrency of a round ask the same completed keys.
    const seeded = new Map<DesignName, SeededKey[]>();
    for (const scenario of options.scenarios) {
      for (const concurrency of options.concurrencies) {
        for (const design of rotate(designs, round)) {
          if (scenario === 'replay' && !seeded.has(design.name)) {
            seeded.set(design.name, await seedReplayKeys(design, options.replayKeys));
          }
          const keys = seeded.get(design.name) ?? [];
          const cpuMeter = meter;
          const { measured, before, after } = await runDuring(design, async () => {
            await prime(scenario, design, provider, keys);
            const cpuBefore = await cpuMeter.snapshot(applicationNameOf(design.name));
            const run = await measure(scenario, design, provider, concurrency, keys);
            const cpuAfter = await cpuMeter.snapshot(applicationNameOf(design.name));
            return { measured: run, before: cpuBefore, after: cpuAfter };
          });
          const serverCpuUsPerCall =
            before && after ? cpuBetweenUs(before, after) / measured.calls : null;
          samples.push({
            ...measured,
            serverCpuUsPerCall,
            round,
            scenario,
            concurrency,
            design: design.name,
          });
          console.log(
            `round ${round} ${scenario.padEnd(6)} c=${String(concurrency).padEnd(2)} ${design.name.padEnd(12)} ${measured.throughput.toFixed(0).padStart(6)}/s  p50 ${measured.p50Ms.toFixed(2)} ms  p99 ${measured.p99Ms.toFixed(2)} ms  cpu/call node ${measured.clientCpuUsPerCall.toFixed(0)} µs, pg ${serverCpuUsPerCall === null ? 'n/a' : `${serverCpuUsPerCall.toFixed(0)} µs`}`,
          );
        }
      }
    }
    for (const concurrency of refundEngine ? options.concurrencies : []) {
      const pair = await runRefundPair(refundEngine!, provider, {
        calls: options.freshCalls,
        concurrency,
      });
      refunds.push({ round, concurrency, ...pair });
      console.log(
        `round ${round} refund c=${String(concurrency).padEnd(2)} engine       ${pair.refund.throughput.toFixed(0).padStart(6)}/s  (its charges ${pair.charge.throughput.toFixed(0)}/s)  p50 ${pair.refund.p50Ms.toFixed(2)} ms`,
      );
    }
    if (sweeper) {
      const swept = await runSweep(sweeper.engine, admin, { keys: options.sweepKeys });
      const keysPerSecond = (options.sweepKeys / swept.elapsedMs) * 1_000;
      sweep.push({
        round,
        keys: options.sweepKeys,
        elapsedMs: swept.elapsedMs,
        keysPerSecond,
        counts: swept.counts,
      });
      console.log(
        `round ${round} sweep  ${options.sweepKeys} keys  ${keysPerSecond.toFixed(0)} keys/s`,
      );
    }
  }

  const results: BenchResults = {
    version: 2,
    mode: options.mode,
    startedAt: startedAt.toISOString(),
    durationS: (Date.now() - startedAt.getTime()) / 1_000,
    config: {
      rounds: options.rounds,
      concurrencies: options.concurrencies,
      freshCalls: options.freshCalls,
      baselineCharges: options.baselineCharges,
      replayCalls: options.replayCalls,
      replayKeys: options.replayKeys,
      stormKeys: options.stormKeys,
      stormCallersPerKey: options.stormCallersPerKey,
      sweepKeys: sweep.length > 0 ? options.sweepKeys : null,
      poolSize: options.poolSize,
      designs: options.designs,
      scenarios: options.scenarios,
    },
    machine,
    source: await sourceVersion(ROOT),
    samples,
    sweep,
    roundTrips,
    batchedRoundTrips,
    refunds,
    refundRoundTrips,
    serverCpu: { source: meter.source, unavailableBecause: meter.unavailableBecause },
    // maxRSS is in kibibytes.
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  await writeOutputs(results, options);
} finally {
  await endDesigns(designs);
  await sweeper?.end();
  await meter?.end();
  await admin.end();
  await database.drop();
  await server.stop();
}

/** One design in one scenario at one concurrency. */
function measure(
  scenario: ScenarioName,
  design: Design,
  provider: BenchProvider,
  concurrency: number,
  seeded: readonly SeededKey[],
): Promise<Measurement> {
  switch (scenario) {
    case 'fresh':
      return runFresh(design, provider, { calls: options.freshCalls, concurrency });
    case 'replay':
      return runReplays(design, seeded, { calls: options.replayCalls, concurrency });
    case 'storm':
      return runStorm(design, provider, {
        keys: options.stormKeys,
        callersPerKey: options.stormCallersPerKey,
        concurrency,
      });
  }
}

/**
 * Untimed runs of every path first: the JIT, the pool's connections and PostgreSQL's caches are
 * warm before the first timed run, whichever design it is.
 */
async function warmUp(designs: Design[], provider: BenchProvider): Promise<void> {
  const calls = options.mode === 'quick' ? 25 : 200;
  for (const design of designs) {
    await runDuring(design, async () => {
      await runFresh(design, provider, { calls, concurrency: 8 });
      const seeded = await seedReplayKeys(design, calls / 5);
      await runReplays(design, seeded, { calls, concurrency: 8 });
      await runStorm(design, provider, { keys: calls / 25, callersPerKey: 32, concurrency: 2 });
    });
  }
}

/**
 * Untimed calls right before a timed run, as many callers as the pool has connections, twice
 * over: a pool that closed idle connections while the other designs ran has them open again,
 * with their statements prepared, so the timed run measures the design, not its start-up.
 */
async function prime(
  scenario: ScenarioName,
  design: Design,
  provider: BenchProvider,
  seeded: readonly SeededKey[],
): Promise<void> {
  const concurrency = options.poolSize;
  const calls = concurrency * 2;
  if (scenario === 'replay') await runReplays(design, seeded, { calls, concurrency });
  else await runFresh(design, provider, { calls, concurrency });
}

/**
 * The designs' order in a round: each round starts at another design (round 1 A B C D, round 2
 * B …), and steps through the list by another stride (1, then 3, …: strides coprime with the
 * count, so every design runs once). No design always goes first, and none always follows the
 * same one: a design runs right after whichever left its garbage to be collected, and with plain
 * rotation the engine always followed the slonik naive design, the largest allocator, and paid
 * for its collections in every round.
 */
function rotate<T>(items: readonly T[], round: number): T[] {
  const n = items.length;
  const strides = Array.from({ length: n }, (_, i) => i + 1).filter(
    (stride) => stride < n && gcd(stride, n) === 1,
  );
  const stride = strides.length > 0 ? strides[(round - 1) % strides.length]! : 1;
  const shift = (round - 1) % n;
  return items.map((_, i) => items[(shift + i * stride) % n]!);
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

async function writeOutputs(results: BenchResults, opts: BenchOptions): Promise<void> {
  const report = renderReport(results);
  const dir = new URL('.bench/', ROOT);
  await mkdir(dir, { recursive: true });
  const suffix = opts.mode === 'quick' ? '-quick' : opts.complete ? '' : '-partial';
  await writeFile(new URL(`results${suffix}.json`, dir), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(new URL(`BENCHMARKS${suffix}.md`, dir), report);
  console.log(`\nwrote .bench/results${suffix}.json and .bench/BENCHMARKS${suffix}.md`);
  if (opts.mode === 'full' && opts.complete) {
    await writeFile(new URL('BENCHMARKS.md', ROOT), report);
    console.log('wrote BENCHMARKS.md');
  }
  const against = [
    ['floor', 'engine ÷ floor (node-postgres prepared)'],
    ['engine-base', `engine ÷ engine-base (the engine of ${options.base ?? ''})`],
  ] as const;
  for (const [baseline, title] of against) {
    const ratios = engineOverFloor(results, baseline);
    if (!ratios) continue;
    console.log(`\n${title}, medians of per-round ratios:`);
    console.log(
      `  ${''.padEnd(48)}${ratios.columns.map((c) => `${c.scenario} c${c.concurrency}`.padStart(11)).join('')}`,
    );
    for (const row of ratios.rows) {
      const cells = row.ratios.map((r) => (Number.isFinite(r) ? r.toFixed(2) : 'n/a').padStart(11));
      console.log(`  ${row.label.padEnd(48)}${cells.join('')}`);
    }
  }
  console.log('\ntargets:');
  for (const t of evaluateTargets(results)) {
    console.log(`  ${targetStatus(t).padEnd(5)} ${t.target}: ${t.measured}`);
  }
}
