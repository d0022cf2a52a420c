import type { GroupCommitCounts } from './countGroupCommit.js';
import type { AttemptEvent, KnownCharge, OperationEnd } from './OperationSink.js';

/** What a worker process is told to do: everything it needs, as plain JSON. */
export type WorkerPlan = {
  databaseUrl: string;
  schema: string;
  runId: string;
  seed: number;
  /** The run's plan is rebuilt from these (see `createChaosPlan`): operations in all, movements' share. */
  planSize: number;
  movementRate: number;
  /** Which worker this is, and how many times it was started before: seeds its randomness. */
  slot: number;
  generation: number;
  concurrency: number;
  crashRate: number;
  stallRate: number;
  holdRate: number;
  clockStepRate: number;
  abandonRate: number;
  duplicateRate: number;
  /** How long this worker's waiting engine waits on a key in progress; `0`: none waits. */
  waitMs: number;
  poolSize: number;
  leaseMs: number;
  providerTimeoutMs: number;
  /** The retention the clients' engines promise (and record for the reaper to keep). */
  retentionMs: number;
  maxClientAttempts: number;
  providerBaseUrl: string;
  /** A file URL, or null for the built-in HTTP adapter. */
  providerModuleUrl: string | null;
  /** The operations to run, by index. */
  operations: number[];
  /**
   * The charges whose outcome is known already, by index, for those of `operations` that are
   * refunds and captures of them (the charge settled in a worker since killed).
   */
  known: Array<[number, KnownCharge]>;
};

/** Parent → worker. `close`: all done, end the pool and leave. */
export type ToWorker = { type: 'start'; plan: WorkerPlan } | { type: 'close' };

/**
 * Worker → parent. `ready`: the pool and provider are up, charges start; `groupCommit`: how the
 * worker's claims and completions went on the wire so far (sent as operations end, so a killed
 * worker's counts are lost only since its last); `idle`: every operation of the plan ended;
 * `error`: the worker could not start.
 */
export type FromWorker =
  | { type: 'ready' }
  | { type: 'attempt'; event: AttemptEvent }
  | { type: 'ended'; end: OperationEnd }
  | { type: 'groupCommit'; counts: GroupCommitCounts }
  | { type: 'idle' }
  | { type: 'error'; message: string };
