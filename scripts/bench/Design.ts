import type { ChargeRequest } from '../../src/request.js';

/**
 * The designs measured side by side. `floor` and `naive` send node-postgres named prepared
 * statements (the strongest baselines); the `-slonik` ones are the same designs on slonik, the
 * engine's own SQL layer, with SQL text planned on every call. `engine-base` is the engine of
 * another commit (`--base REV`), only when asked for.
 */
export const DESIGN_NAMES = [
  'engine',
  'engine-base',
  'engine-otel',
  'engine-otel-sampled',
  'engine-wait',
  'engine-bookkeeping',
  'engine-hooks',
  'floor',
  'floor-slonik',
  'naive',
  'naive-slonik',
] as const;
export type DesignName = (typeof DESIGN_NAMES)[number];

/** The schema each design writes to: one migration in each, so the tables are identical. */
export const DESIGN_SCHEMAS: Readonly<Record<DesignName, string>> = {
  engine: 'chargeonce',
  'engine-base': 'bench_engine_base',
  'engine-otel': 'bench_engine_otel',
  'engine-otel-sampled': 'bench_engine_otel_sampled',
  'engine-wait': 'bench_engine_wait',
  'engine-bookkeeping': 'bench_engine_bookkeeping',
  'engine-hooks': 'bench_engine_hooks',
  floor: 'bench_floor',
  'floor-slonik': 'bench_floor_slonik',
  naive: 'bench_naive',
  'naive-slonik': 'bench_naive_slonik',
};

/**
 * What one call came to, the same for every design, so a scenario can check it without knowing
 * how each design reports a key in use (the engine throws, the others return).
 */
export type DesignOutcome =
  | { kind: 'charged'; chargeId: string }
  | { kind: 'replayed'; chargeId: string }
  | { kind: 'inUse' }
  | { kind: 'reused' };

/** One way of charging once per key, as a scenario drives it, on a pool of its own. */
export type Design = {
  name: DesignName;
  charge(key: string, request: ChargeRequest): Promise<DesignOutcome>;
  /**
   * Runs the design's calls with whatever it sets up process-wide in place only meanwhile (the
   * OpenTelemetry designs' context manager), so that no other design's runs pay for it. Without
   * it, `runDuring` runs the calls as they are.
   */
  during?: <T>(run: () => Promise<T>) => Promise<T>;
  /**
   * Engines behind it, taking calls in turn (`spreadDesign`); one when absent. Each engine's
   * first call pays for its start-up, so a warm-up makes this many.
   */
  instances?: number;
  /** Ends the design's pool. */
  end(): Promise<void>;
};

/** Where a design connects: its own pool of `poolSize` connections to `url`. */
export type DesignConnection = {
  /** Carries the design's `application_name`, so its server processes can be told apart. */
  url: string;
  poolSize: number;
  schema: string;
};

/** Runs `run` inside `design.during`, if the design has one. */
export function runDuring<T>(design: Design, run: () => Promise<T>): Promise<T> {
  return design.during ? design.during(run) : run();
}
