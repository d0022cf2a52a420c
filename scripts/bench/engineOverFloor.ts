import type { BenchResults, ScenarioName } from './BenchResults.js';
import type { DesignName } from './Design.js';
import { summarize, type Metric } from './summarize.js';

/** One column of the side-by-side ratios: a scenario at a concurrency. */
export type RatioColumn = { scenario: ScenarioName; concurrency: number };

/** The engine ÷ the node-postgres floor, per metric, per column; NaN where not measured. */
export type EngineOverFloor = {
  columns: RatioColumn[];
  rows: { label: string; ratios: number[] }[];
};

const ROWS: { label: string; metric: Metric }[] = [
  { label: 'throughput (higher: engine faster)', metric: 'throughput' },
  { label: 'latency p50 (lower: engine faster)', metric: 'p50Ms' },
  { label: 'Node CPU per call (lower: engine cheaper)', metric: 'clientCpuUsPerCall' },
  { label: 'PostgreSQL CPU per call (lower: engine cheaper)', metric: 'serverCpuUsPerCall' },
];

/**
 * The engine against the node-postgres floor (or another `baseline`: `engine-base`, the engine
 * of `--base`), side by side for fresh charges and replays at every concurrency: each ratio is
 * the median of per-round ratios. Null when the run did not measure both designs.
 */
export function engineOverFloor(
  results: BenchResults,
  baseline: DesignName = 'floor',
): EngineOverFloor | null {
  const { designs, scenarios, concurrencies } = results.config;
  if (!designs.includes('engine') || !designs.includes(baseline)) return null;
  const columns = (['fresh', 'replay'] as const)
    .filter((scenario) => scenarios.includes(scenario))
    .flatMap((scenario) => concurrencies.map((concurrency) => ({ scenario, concurrency })));
  if (columns.length === 0) return null;
  const summary = summarize(results.samples);
  return {
    columns,
    rows: ROWS.map(({ label, metric }) => ({
      label,
      ratios: columns.map((c) =>
        summary.ratio(c.scenario, c.concurrency, 'engine', baseline, metric),
      ),
    })),
  };
}
