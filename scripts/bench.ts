// `npm run bench`: the engine against the floor (the least database work a correct design must
// do) and against the naive phased design of the seed articles, side by side in one run. Writes
// BENCHMARKS.md (a complete full run only) and .bench/results*.json. See parseBenchOptions for
// the flags and BENCHMARKS.md for the method.
import { mkdir, writeFile } from 'node:fs/promises';
import type { DatabasePool } from 'slonik';
import { createEnginePool } from '../src/index.js';
import { createBenchDatabase, emptyTables, migrateSchemas } from './bench/benchDatabase.js';
import type { BenchResults, Sample, ScenarioName, SweepSample } from './bench/BenchResults.js';
import { createBenchProvider, type BenchProvider } from './bench/createBenchProvider.js';
import { createEngineDesign } from './bench/createEngineDesign.js';
import { createFloorDesign } from './bench/createFloorDesign.js';
import { createNaiveDesign } from './bench/createNaiveDesign.js';
import type { Design, DesignName } from './bench/Design.js';
import { describeMachine } from './bench/describeMachine.js';
import { evaluateTargets } from './bench/evaluateTargets.js';
import { measureRoundTrips } from './bench/measureRoundTrips.js';
import { parseBenchOptions, type BenchOptions } from './bench/parseBenchOptions.js';
import { renderReport } from './bench/renderReport.js';
import { runFresh } from './bench/runFresh.js';
import { runReplays, seedReplayKeys, type SeededKey } from './bench/runReplays.js';
import { runStorm } from './bench/runStorm.js';
import { runSweep } from './bench/runSweep.js';
import { sourceVersion } from './bench/sourceVersion.js';
import { startDatabase } from './support/database.js';

const ROOT = new URL('../', import.meta.url);

let options: BenchOptions;
try {
  options = parseBenchOptions(process.argv.slice(2));
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
}

const startedAt = new Date();
const server = await startDatabase();
const database = await createBenchDatabase(server.url);
const pool = await createEnginePool(database.url, { maximumPoolSize: options.poolSize });
try {
  await migrateSchemas(pool);
  const provider = createBenchProvider();
  const designsOn = (p: DatabasePool): Design[] =>
    [
      createEngineDesign(p, provider),
      createFloorDesign(p, provider),
      createNaiveDesign(p, provider),
    ].filter((d) => options.designs.includes(d.name));
  const designs = designsOn(pool);
  const sweeper = options.sweep ? createEngineDesign(pool, provider).engine : null;
  const machine = await describeMachine(pool, server.source, options.note);
  console.log(
    `bench (${options.mode}): ${machine.cpuCount} × ${machine.cpuModel}, Node ${machine.node}, ${machine.postgres} (${machine.postgresSource}), load/core ${machine.loadPerCoreAtStart}`,
  );

  const roundTrips = await measureRoundTrips(database.url, provider, designsOn);
  console.log('round trips per call (fresh / replay):');
  for (const [name, wire] of Object.entries(roundTrips ?? {})) {
    console.log(`  ${name.padEnd(6)} ${wire.fresh.roundTrips} / ${wire.replay.roundTrips}`);
  }

  await warmUp(designs, provider);
  const samples: Sample[] = [];
  const sweep: SweepSample[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    await emptyTables(pool);
    provider.forget();
    // Replays at every concurrency of a round ask the same completed keys.
    const seeded = new Map<DesignName, SeededKey[]>();
    for (const scenario of options.scenarios) {
      for (const concurrency of options.concurrencies) {
        for (const design of rotate(designs, round)) {
          if (scenario === 'replay' && !seeded.has(design.name)) {
            seeded.set(design.name, await seedReplayKeys(design, options.replayKeys));
          }
          const measured = await measure(
            scenario,
            design,
            provider,
            concurrency,
            seeded.get(design.name) ?? [],
          );
          samples.push({ ...measured, round, scenario, concurrency, design: design.name });
          console.log(
            `round ${round} ${scenario.padEnd(6)} c=${String(concurrency).padEnd(2)} ${design.name.padEnd(6)} ${measured.throughput.toFixed(0).padStart(6)}/s  p50 ${measured.p50Ms.toFixed(2)} ms  p99 ${measured.p99Ms.toFixed(2)} ms`,
          );
        }
      }
    }
    if (sweeper) {
      const swept = await runSweep(sweeper, pool, { keys: options.sweepKeys });
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
    version: 1,
    mode: options.mode,
    startedAt: startedAt.toISOString(),
    durationS: (Date.now() - startedAt.getTime()) / 1_000,
    config: {
      rounds: options.rounds,
      concurrencies: options.concurrencies,
      freshCalls: options.freshCalls,
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
    // maxRSS is in kibibytes.
    peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  await writeOutputs(results, options);
} finally {
  await pool.end();
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
) {
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
    await runFresh(design, provider, { calls, concurrency: 8 });
    const seeded = await seedReplayKeys(design, calls / 5);
    await runReplays(design, seeded, { calls, concurrency: 8 });
    await runStorm(design, provider, { keys: calls / 25, callersPerKey: 32, concurrency: 2 });
  }
}

/** Round 1 runs A B C, round 2 B C A, round 3 C A B: no design always goes first. */
function rotate<T>(items: readonly T[], round: number): T[] {
  const shift = (round - 1) % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
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
  console.log('\ntargets:');
  for (const t of evaluateTargets(results)) {
    const status = t.pass === null ? '  -  ' : t.pass ? 'pass ' : 'MISS ';
    console.log(`  ${status} ${t.target}: ${t.measured}`);
  }
}
