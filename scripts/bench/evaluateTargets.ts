import type { BenchResults } from './BenchResults.js';
import { summarize } from './summarize.js';

/** One target of the issues, and where the run left it. */
export type TargetResult = {
  target: string;
  measured: string;
  /** Null when the run did not measure what the target needs. */
  pass: boolean | null;
  /**
   * A measurement past what the issue asks, held to the target's bound for comparison: reported,
   * never a miss of the run.
   */
  beyond?: true;
};

/** A target's status as the report and the console print it. */
export function targetStatus(t: TargetResult): string {
  if (t.pass === null) return '–';
  if (t.beyond) return t.pass ? 'within (not a target)' : 'over (not a target)';
  return t.pass ? 'pass' : 'MISS';
}

// Against the node-postgres floor (`floor`): the hot-path targets.
const FRESH_VS_FLOOR = 0.85;
const REPLAY_VS_FLOOR = 0.6;
const NODE_CPU_VS_FLOOR = 1.5;
// Set against the seed articles' naive design on slonik, and kept against that design.
const FRESH_VS_NAIVE_SLONIK_AT_32 = 1.5;
const STORM_P99_OVER_FRESH_P50 = 20;
// Past the floor with group commit (per-charge floor at 32 callers), without slowing a lone call.
const GROUP_FRESH_VS_FLOOR_AT_32 = 2;
const GROUP_REPLAY_VS_FLOOR_AT_32 = 1.5;
const LONE_P50_VS_FLOOR_AT_1 = 1.1;
// Waiters woken on commit: a storm's callers answered about as fast as a fresh charge.
const STORM_WAIT_P50_OVER_FRESH_P50 = 1.5;
// With an OpenTelemetry SDK registered, against none (the operations issue).
const OTEL_VS_NONE_AT_8 = 0.95;

/** Checks a run against the targets. Ratios are the medians of per-round ratios. */
export function evaluateTargets(results: BenchResults): TargetResult[] {
  const summary = summarize(results.samples);
  const { concurrencies } = results.config;
  const has = (name: string) => results.samples.some((s) => `${s.scenario}/${s.design}` === name);
  const checks: TargetResult[] = [];
  const compare = (
    target: string,
    value: number,
    passes: (value: number) => boolean,
    measured: boolean,
  ) =>
    checks.push({
      target,
      measured: measured && Number.isFinite(value) ? `${value.toFixed(2)}×` : 'not measured',
      pass: measured && Number.isFinite(value) ? passes(value) : null,
    });

  for (const c of concurrencies) {
    compare(
      `fresh throughput, engine ≥ ${FRESH_VS_FLOOR} × floor (node-postgres), concurrency ${c}`,
      summary.ratio('fresh', c, 'engine', 'floor', 'throughput'),
      (v) => v >= FRESH_VS_FLOOR,
      has('fresh/engine') && has('fresh/floor'),
    );
  }
  for (const c of concurrencies) {
    compare(
      `replay throughput, engine ≥ ${REPLAY_VS_FLOOR} × floor (node-postgres), concurrency ${c}`,
      summary.ratio('replay', c, 'engine', 'floor', 'throughput'),
      (v) => v >= REPLAY_VS_FLOOR,
      has('replay/engine') && has('replay/floor'),
    );
  }
  for (const c of concurrencies) {
    compare(
      `Node CPU per fresh charge, engine ≤ ${NODE_CPU_VS_FLOOR} × floor (node-postgres), concurrency ${c}`,
      summary.ratio('fresh', c, 'engine', 'floor', 'clientCpuUsPerCall'),
      (v) => v <= NODE_CPU_VS_FLOOR,
      has('fresh/engine') && has('fresh/floor'),
    );
  }
  // Storm p50 (engine-wait) at storm concurrency `stormAt` against fresh p50 at `freshAt`.
  const stormWaitCheck = (stormAt: number, freshAt: number, where: string, beyond: boolean) => {
    const stormP50 = summary.median('storm', stormAt, 'engine-wait', 'p50Ms');
    const freshP50 = summary.median('fresh', freshAt, 'engine-wait', 'p50Ms');
    const measured = has('storm/engine-wait') && has('fresh/engine-wait');
    const times = stormP50 / freshP50;
    checks.push({
      target: `storm p50 with waiters woken on commit ≤ ${STORM_WAIT_P50_OVER_FRESH_P50} × fresh p50 (engine-wait), ${where}`,
      measured: measured
        ? `${stormP50.toFixed(2)} ms = ${times.toFixed(2)} × ${freshP50.toFixed(2)} ms`
        : 'not measured',
      pass: measured && Number.isFinite(times) ? times <= STORM_WAIT_P50_OVER_FRESH_P50 : null,
      ...(beyond ? { beyond: true as const } : {}),
    });
  };
  // The storm is 32 callers on one key, against fresh charges "at the same concurrency":
  // 32 callers in flight either way. That is the storm column at concurrency 1 (one key stormed
  // at a time) against fresh charges at concurrency 32.
  const perKey = results.config.stormCallersPerKey;
  if (concurrencies.includes(1) && concurrencies.includes(perKey)) {
    stormWaitCheck(
      1,
      perKey,
      `${perKey} callers on one key against ${perKey} fresh callers (storm concurrency 1, fresh concurrency ${perKey})`,
      false,
    );
  }
  // Past the target, the same bound column by column: at concurrency c, c keys stormed at once
  // (32·c callers in flight) against c fresh callers.
  for (const c of concurrencies) {
    stormWaitCheck(
      c,
      c,
      `${c} key(s) stormed at once (${perKey * c} callers) against ${c} fresh callers`,
      true,
    );
  }
  const atBoth = (scenario: string) => has(`${scenario}/engine`) && has(`${scenario}/floor`);
  compare(
    `group commit: fresh throughput, engine ≥ ${GROUP_FRESH_VS_FLOOR_AT_32} × floor, concurrency 32`,
    summary.ratio('fresh', 32, 'engine', 'floor', 'throughput'),
    (v) => v >= GROUP_FRESH_VS_FLOOR_AT_32,
    atBoth('fresh') && concurrencies.includes(32),
  );
  compare(
    `group commit: replay throughput, engine ≥ ${GROUP_REPLAY_VS_FLOOR_AT_32} × floor, concurrency 32`,
    summary.ratio('replay', 32, 'engine', 'floor', 'throughput'),
    (v) => v >= GROUP_REPLAY_VS_FLOOR_AT_32,
    atBoth('replay') && concurrencies.includes(32),
  );
  compare(
    `group commit: a lone fresh charge's p50, engine ≤ ${LONE_P50_VS_FLOOR_AT_1} × floor, concurrency 1`,
    summary.ratio('fresh', 1, 'engine', 'floor', 'p50Ms'),
    (v) => v <= LONE_P50_VS_FLOOR_AT_1,
    atBoth('fresh') && concurrencies.includes(1),
  );
  for (const scenario of ['fresh', 'replay'] as const) {
    compare(
      `${scenario} throughput with an OpenTelemetry SDK ≥ ${OTEL_VS_NONE_AT_8} × without, concurrency 8`,
      summary.ratio(scenario, 8, 'engine-otel', 'engine', 'throughput'),
      (v) => v >= OTEL_VS_NONE_AT_8,
      has(`${scenario}/engine-otel`) && has(`${scenario}/engine`) && concurrencies.includes(8),
    );
  }
  compare(
    `fresh throughput, engine ≥ ${FRESH_VS_NAIVE_SLONIK_AT_32} × naive-slonik, concurrency 32`,
    summary.ratio('fresh', 32, 'engine', 'naive-slonik', 'throughput'),
    (v) => v >= FRESH_VS_NAIVE_SLONIK_AT_32,
    has('fresh/engine') && has('fresh/naive-slonik') && concurrencies.includes(32),
  );
  for (const c of concurrencies) {
    const stormP99 = summary.median('storm', c, 'engine', 'p99Ms');
    const freshP50 = summary.median('fresh', c, 'engine', 'p50Ms');
    const measured = has('storm/engine') && has('fresh/engine');
    const times = stormP99 / freshP50;
    checks.push({
      target: `storm p99 < ${STORM_P99_OVER_FRESH_P50} × fresh p50 (engine), concurrency ${c}`,
      measured: measured
        ? `${stormP99.toFixed(2)} ms = ${times.toFixed(1)} × ${freshP50.toFixed(2)} ms`
        : 'not measured',
      pass: measured && Number.isFinite(times) ? times < STORM_P99_OVER_FRESH_P50 : null,
    });
  }
  const wire = results.roundTrips?.engine;
  checks.push({
    target: 'round trips per fresh charge = 2 (engine)',
    measured: wire ? String(wire.fresh.roundTrips) : 'not measured',
    pass: wire ? wire.fresh.roundTrips === 2 : null,
  });
  checks.push({
    target: 'round trips per replay = 1 (engine)',
    measured: wire ? String(wire.replay.roundTrips) : 'not measured',
    pass: wire ? wire.replay.roundTrips === 1 : null,
  });
  // A refund costs what a charge costs (the captures-and-refunds issue), counted on the wire.
  const refundWire = results.refundRoundTrips ?? null;
  checks.push({
    target: 'round trips per refund: 2 fresh (2 commits), 1 for a replay',
    measured: refundWire
      ? `${refundWire.fresh.roundTrips} (${refundWire.fresh.transactions}) / ${refundWire.replay.roundTrips}`
      : 'not measured',
    pass: refundWire
      ? refundWire.fresh.roundTrips === 2 &&
        refundWire.fresh.transactions === 2 &&
        refundWire.replay.roundTrips === 1
      : null,
  });
  return checks;
}
