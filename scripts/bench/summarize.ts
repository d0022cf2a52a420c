import type { Sample, ScenarioName } from './BenchResults.js';
import type { DesignName } from './Design.js';
import { median } from './stats.js';

/** The per-call numbers of a sample that a table can show. */
export type Metric = 'throughput' | 'p50Ms' | 'p99Ms' | 'clientCpuUsPerCall' | 'serverCpuUsPerCall';

/** Reads medians and paired ratios out of a run's samples. */
export type Summary = {
  /** The median over rounds of `design`'s `metric`; NaN when no round measured it. */
  median(scenario: ScenarioName, concurrency: number, design: DesignName, metric: Metric): number;
  /**
   * The median over rounds of `a`'s `metric` divided by `b`'s, each ratio taken within one round:
   * the two ran moments apart, so drift in the machine's load cancels out of each ratio.
   */
  ratio(
    scenario: ScenarioName,
    concurrency: number,
    a: DesignName,
    b: DesignName,
    metric: Metric,
  ): number;
};

export function summarize(samples: readonly Sample[]): Summary {
  const find = (scenario: ScenarioName, concurrency: number, design: DesignName) =>
    samples.filter(
      (s) => s.scenario === scenario && s.concurrency === concurrency && s.design === design,
    );
  // A value not measured (null) is NaN, which medians skip.
  const value = (s: Sample, metric: Metric) => s[metric] ?? Number.NaN;
  return {
    median: (scenario, concurrency, design, metric) =>
      median(find(scenario, concurrency, design).map((s) => value(s, metric))),
    ratio: (scenario, concurrency, a, b, metric) => {
      const others = new Map(
        find(scenario, concurrency, b).map((s) => [s.round, value(s, metric)]),
      );
      return median(
        find(scenario, concurrency, a).flatMap((s) => {
          const other = others.get(s.round);
          return other === undefined || other === 0 ? [] : [value(s, metric) / other];
        }),
      );
    },
  };
}
