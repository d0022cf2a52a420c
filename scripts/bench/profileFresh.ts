// Node CPU per fresh charge (or replay, or storm caller: `--scenario`), the engine against the floor and nothing else: a smaller, steadier
// instrument than the full bench, for finding where the engine's CPU goes. Run it as
//
//   npx tsx scripts/bench/profileFresh.ts [--designs engine,floor] [--calls 2000] [--runs 5]
//                                         [--concurrency 1,8] [--modules a.js,b.js]
//                                         [--scenario fresh|replay|storm]
//
// or under `node --cpu-prof --import tsx scripts/bench/profileFresh.ts --designs engine` to see
// the functions. Each run empties the tables, then times `calls` fresh charges per design and
// concurrency, the order of the designs reversed from run to run; it prints Node CPU per call
// (process.cpuUsage) and transactions committed per call (PostgreSQL's statistics: how well
// group commit batched) of every run, the median per design and concurrency, and the median of the
// per-run ratios to the floor (each taken between runs moments apart: the steadier figure on a
// shared machine).
//
// `--modules` adds an engine design per built module (`npm run build`, then
// `--modules dist/index.js`), each on a schema of its own, migrated by that module, and named
// after its file: two builds (before and after a change) side by side, and the engine as users
// run it (tsx compiles with esbuild's keepNames, a defineProperty for every closure made per
// call; a build has none).
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { sql } from 'slonik';
import { tablesIn } from '../../src/store/tables.js';
import { startDatabase } from '../support/database.js';
import type { EngineModule } from './baseEngine.js';
import { createBenchDatabase, emptyTables, migrateSchemas } from './benchDatabase.js';
import { createBenchProvider } from './createBenchProvider.js';
import { createDesigns, endDesigns } from './createDesigns.js';
import { createEngineDesign } from './createEngineDesign.js';
import { createSlonikPool } from './createSlonikPool.js';
import { DESIGN_NAMES, runDuring, type Design, type DesignName } from './Design.js';
import { runFresh } from './runFresh.js';
import { runReplays, seedReplayKeys } from './runReplays.js';
import { runStorm } from './runStorm.js';
import { median } from './stats.js';
import { withApplicationName } from './withApplicationName.js';

const { values } = parseArgs({
  options: {
    designs: { type: 'string', default: 'engine,floor' },
    calls: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '1,8' },
    'pool-size': { type: 'string', default: '10' },
    scenario: { type: 'string', default: 'fresh' },
    modules: { type: 'string', default: '' },
  },
});
const designNames = values.designs
  .split(',')
  .filter((name) => name !== '')
  .map((name) => {
    if (!(DESIGN_NAMES as readonly string[]).includes(name)) throw new Error(`no design ${name}`);
    return name as DesignName;
  });
const modules = values.modules.split(',').filter((path) => path !== '');
const calls = Number(values.calls);
const runs = Number(values.runs);
const concurrencies = values.concurrency.split(',').map(Number);
const poolSize = Number(values['pool-size']);
if (values.scenario !== 'fresh' && values.scenario !== 'replay' && values.scenario !== 'storm') {
  throw new Error('--scenario is fresh, replay or storm');
}
const scenario = values.scenario;

/** A design as this script runs it: its label, and its own tables to empty when not the bench's. */
type Measured = { label: string; design: Design; tables: ReturnType<typeof tablesIn> | null };

const server = await startDatabase();
const database = await createBenchDatabase(server.url);
const admin = await createSlonikPool(database.url, 2);
const provider = createBenchProvider();
const measured: Measured[] = [];
/** Transactions committed in the bench's database so far (PostgreSQL's statistics). */
async function commitCount(): Promise<number> {
  await admin.query(sql.unsafe`SELECT pg_stat_clear_snapshot()`);
  return Number(
    await admin.oneFirst(
      sql.unsafe`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`,
    ),
  );
}
try {
  await migrateSchemas(admin);
  for (const design of await createDesigns(database.url, designNames, poolSize, provider)) {
    measured.push({ label: design.name, design, tables: null });
  }
  for (const [i, path] of modules.entries()) {
    const module = (await import(pathToFileURL(path).href)) as EngineModule;
    const schema = `bench_engine_module_${i + 1}`;
    await module.migrate(admin, { schema });
    const url = withApplicationName(database.url, `chargeonce-bench-module-${i + 1}`);
    const design = await createEngineDesign(
      { url, poolSize, schema },
      provider,
      false,
      'reject',
      module,
    );
    measured.push({ label: basename(path), design, tables: tablesIn(schema) });
  }
  // The JIT, the connections and their prepared statements warm before anything is timed.
  for (const { design } of measured) {
    for (const concurrency of concurrencies) {
      await runDuring(design, () => runFresh(design, provider, { calls: 500, concurrency }));
    }
  }
  const cpu = new Map<string, number[]>();
  /** Per run, series → µs per call, for the ratios to the floor. */
  const perRun: Map<string, number>[] = [];
  for (let run = 1; run <= runs; run++) {
    // Every design's tables emptied and filled alike (see emptyTables).
    for (const { tables } of measured) {
      if (tables) await admin.query(sql.unsafe`TRUNCATE ${tables.keys}, ${tables.charges}`);
    }
    await emptyTables(admin, 20_000);
    provider.forget();
    const thisRun = new Map<string, number>();
    perRun.push(thisRun);
    for (const concurrency of concurrencies) {
      // Reversed from run to run, so drift in the machine hits every design alike.
      const order = run % 2 === 1 ? measured : [...measured].reverse();
      for (const { label, design } of order) {
        // Around the run as well, for the split of user and system time (this includes making
        // the keys and requests, which is the same for every design).
        const seeded = scenario === 'replay' ? await seedReplayKeys(design, 500) : [];
        const commitsBefore = await commitCount();
        const before = process.cpuUsage();
        const result = await runDuring(design, () =>
          scenario === 'replay'
            ? runReplays(design, seeded, { calls, concurrency })
            : scenario === 'storm'
              ? runStorm(design, provider, {
                  keys: Math.ceil(calls / 32),
                  callersPerKey: 32,
                  concurrency,
                })
              : runFresh(design, provider, { calls, concurrency }),
        );
        const spent = process.cpuUsage(before);
        const commits = (await commitCount()) - commitsBefore;
        const series = `${label} c${concurrency}`;
        cpu.set(series, [...(cpu.get(series) ?? []), result.clientCpuUsPerCall]);
        thisRun.set(series, result.clientCpuUsPerCall);
        console.log(
          `run ${run} ${series.padEnd(24)} ${result.clientCpuUsPerCall.toFixed(0).padStart(5)} µs/call (user ${(spent.user / calls).toFixed(0)}, system ${(spent.system / calls).toFixed(0)})  ${result.throughput.toFixed(0).padStart(5)}/s  p50 ${result.p50Ms.toFixed(2)} ms  commits/call ${(commits / calls).toFixed(2)}`,
        );
      }
    }
  }
  console.log(
    `\nNode CPU per ${scenario === 'replay' ? 'replay' : 'fresh charge'}, median of runs (µs), and of per-run ratios to floor:`,
  );
  for (const [series, samples] of cpu) {
    const concurrency = series.slice(series.lastIndexOf(' ') + 1);
    const ratios = perRun.flatMap((run) => {
      const floor = run.get(`floor ${concurrency}`);
      const own = run.get(series);
      return floor === undefined || own === undefined ? [] : [own / floor];
    });
    const ratio = ratios.length > 0 ? `${median(ratios).toFixed(2)}× floor` : '';
    console.log(
      `  ${series.padEnd(24)} ${median(samples).toFixed(0).padStart(5)}  ${ratio.padStart(11)}   (${samples.map((s) => s.toFixed(0)).join(' ')})`,
    );
  }
} finally {
  await endDesigns(measured.map((m) => m.design));
  await admin.end();
  await database.drop();
  await server.stop();
}
