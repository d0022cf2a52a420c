import type { BenchOptions } from './parseBenchOptions.js';
import type { DesignName } from './Design.js';

/** The scenarios run for every design, at every concurrency, every round. */
export const SCENARIOS = ['fresh', 'replay', 'storm'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/** What one design did in one scenario at one concurrency in one round. */
export type Measurement = {
  /** Calls timed: charges (fresh, replay) or callers (storm). */
  calls: number;
  /** Calls per second; keys per second for a storm. */
  throughput: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * CPU this process spent per call, in microseconds (`process.cpuUsage` around the run): the
   * client's share of the cost, the bench's own driving and in-process provider included.
   */
  clientCpuUsPerCall: number;
  /** A storm's tally, checked before it is recorded. */
  storm?: StormTally;
};

/** Who got what in a storm, and what the provider saw. */
export type StormTally = {
  keys: number;
  callersPerKey: number;
  charged: number;
  replayed: number;
  inUse: number;
  providerCreateCalls: number;
  providerCharges: number;
};

export type Sample = Measurement & {
  round: number;
  scenario: ScenarioName;
  concurrency: number;
  design: DesignName;
  /**
   * CPU PostgreSQL spent per call for this design, in microseconds: the design's own backends,
   * read before and after the run. Null when the server's processes cannot be read from here.
   */
  serverCpuUsPerCall: number | null;
};

/** Database round trips and transactions per call, counted on the wire, by design. */
export type RoundTrips = Partial<Record<DesignName, { fresh: WireCost; replay: WireCost }>>;
export type WireCost = {
  roundTrips: number;
  /** Round trips that ended outside a transaction: autocommitted statements and COMMITs. */
  transactions: number;
};

/** Round trips and commits per call at one concurrency, amortized over batches (group commit). */
export type BatchedWireCost = {
  design: DesignName;
  concurrency: number;
  fresh: WireCost;
  replay: WireCost;
};

/** The engine's sweeper draining abandoned keys. */
export type SweepSample = {
  round: number;
  keys: number;
  elapsedMs: number;
  keysPerSecond: number;
  counts: Record<string, number>;
};

/** Fresh charges, then a fresh refund of each, by the engine at one concurrency in one round. */
export type RefundSample = {
  round: number;
  concurrency: number;
  charge: Measurement;
  refund: Measurement;
};

/** The machine, described without anything that identifies it. */
export type MachineDescription = {
  cpuCount: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  postgresSource: 'embedded' | 'DATABASE_URL';
  postgresSettings: Record<string, string>;
  /** 1-minute load average per core just before the first round: other work on the machine. */
  loadPerCoreAtStart: number;
  note: string | null;
};

/** Everything one run produced: what `.bench/*.json` holds and the report is made from. */
export type BenchResults = {
  version: 2;
  mode: 'full' | 'quick';
  startedAt: string;
  durationS: number;
  /** The options that shaped the run; `sweepKeys` is null when no sweep ran. */
  config: Pick<
    BenchOptions,
    | 'rounds'
    | 'concurrencies'
    | 'freshCalls'
    | 'baselineCharges'
    | 'replayCalls'
    | 'replayKeys'
    | 'stormKeys'
    | 'stormCallersPerKey'
    | 'poolSize'
    | 'designs'
    | 'scenarios'
  > & { sweepKeys: number | null };
  machine: MachineDescription;
  /** The commit measured, and whether src/ or migrations/ had uncommitted changes. */
  source: { commit: string; uncommittedChanges: boolean } | null;
  samples: Sample[];
  sweep: SweepSample[];
  roundTrips: RoundTrips | null;
  /** Round trips and commits per call under concurrency; null when not counted. */
  batchedRoundTrips?: BatchedWireCost[] | null;
  /** Refunds against charges, engine only; empty when not run. */
  refunds: RefundSample[];
  /** Round trips per refund, counted on the wire; null when not counted. */
  refundRoundTrips: { fresh: WireCost; replay: WireCost } | null;
  /** How PostgreSQL's CPU per call was read, or why it was not. */
  serverCpu: { source: string | null; unavailableBecause: string | null };
  peakRssMiB: number;
};
