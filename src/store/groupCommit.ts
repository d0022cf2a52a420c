import { batchStatements } from './batchStatements.js';
import {
  claimKeyPrepared,
  claimValues,
  toClaimResult,
  type ClaimInput,
  type ClaimResult,
} from './claimKey.js';
import {
  completedOf,
  completeKeyPrepared,
  completionValues,
  type CompletionInput,
} from './completeKey.js';
import { createBatcher, createSharedLoad } from './createBatcher.js';
import type { PgPoolLike } from './pgPoolLike.js';
import { queryPrepared } from './hotQuery.js';
import { isOutOfReach } from './storeErrors.js';
import type { Tables } from './tables.js';

/**
 * The hot statements with group commit: concurrent claims of one engine share one statement, one
 * round trip and one commit, and so do concurrent completions. A lone call goes out at once,
 * unbatched, as the single statement (2 round trips per fresh charge, 1 per replay).
 */
export type GroupCommit = {
  /** As `claimKeyPrepared`: null when a racing claim hid the key (read it again). */
  claim: (input: ClaimInput) => Promise<ClaimResult | null>;
  complete: (input: CompletionInput) => Promise<boolean>;
};

/** Enough to share the commit's cost, small enough that one batch stays one quick statement. */
const MAX_BATCH = 64;

/** The pool's connections (node-postgres's default when it does not say). */
function poolSize(pool: PgPoolLike): number {
  const max = pool.options?.max;
  return typeof max === 'number' && max > 0 ? max : 10;
}

/**
 * When calls are batched, and how many batches go at once.
 *
 * Statements that write (completions, claims of new keys) are batched as soon as another call
 * waits on a statement: a batch of any size shares one round trip and one commit, and with the
 * calls of a turn gathered (see `createBatcher`) that beats single statements from three callers
 * on. Fresh charges on a 10-connection pool, engine ÷ node-postgres floor in side-by-side runs:
 * batching only past the pool, 0.99 / 0.95 / 0.97 / 0.90 / 0.85 at 2 / 3 / 4 / 6 / 8 callers;
 * batching from the second call, 0.87–0.99 / 1.07 / 1.09–1.23 / 1.25–1.36 / 1.34–1.51 (2.2 at
 * 32 either way). They go one batch at a time: each commit waits for its WAL flush, and one
 * larger batch per flush does at least as much as two smaller ones contending for the CPU.
 *
 * Claims that find their keys (replays, 409s, 422s) only read: there is no commit to share, and
 * batching them below the pool only made callers wait (replays at 2 and 4 callers: 0.6× and 0.8×
 * the throughput of single statements). While most recent claims did, claims go alone until more
 * calls wait than the pool has connections, and then two batches at a time (replays at 32
 * callers: 1.1–1.2× the throughput of one at a time; three did no better than one). On a pool of
 * two or three connections, one each, so the two statements never wait for a connection.
 */
const WRITING_IN_FLIGHT = 1;
const READING_IN_FLIGHT = 2;

/**
 * How long a statement may hold one of the batchers' slots while other calls wait for it (see
 * `stalledAfterMs`): a claim that waits on another process's uncommitted key, or a commit that
 * stalls, no longer holds the engine's other calls back past this. Far above a commit's few
 * milliseconds, so a steady load keeps one batch per flush.
 */
const STALLED_SLOT_MS = 100;

/** The load at which writing statements batch: any other call waiting on a statement. */
const WRITING_LIGHT_LOAD = 1;

/** How much one claim moves the running share of claims that found their key: about the last 64. */
const SHARE_WEIGHT = 1 / 64;

/** What claims have been doing lately: mostly reading existing keys, or mostly inserting. */
export function claimsInFlight(connections: number): {
  /** Whether most recent claims found their key. */
  reading: () => boolean;
  /** Batches of claims in flight at most. */
  limit: () => number;
  /** Counts an answered claim, batched or alone. */
  note: (result: ClaimResult | null) => void;
} {
  const inFlight = connections >= 4 ? READING_IN_FLIGHT : WRITING_IN_FLIGHT;
  let readShare = 0;
  const reading = (): boolean => readShare > 0.5;
  return {
    reading,
    limit: () => (reading() ? inFlight : WRITING_IN_FLIGHT),
    note: (result) => {
      readShare += ((result?.kind === 'existing' ? 1 : 0) - readShare) * SHARE_WEIGHT;
    },
  };
}

const scopedId = (input: { merchantId: string; operation: string; key: string }) =>
  `${input.merchantId}\u0000${input.operation}\u0000${input.key}`;

/** Column arrays, one per statement parameter, from rows of values. */
function columns(rows: unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, column) => rows.map((row) => row[column]));
}

export function createGroupCommit(pool: PgPoolLike, tables: Tables): GroupCommit {
  const statements = batchStatements(tables);
  const connections = poolSize(pool);
  const claims = claimsInFlight(connections);
  // Shared by the two batchers: a claim and a completion each hold a connection.
  const load = createSharedLoad();
  return {
    claim: createBatcher<ClaimInput, ClaimResult | null>({
      one: (input) => claimKeyPrepared(pool, tables, input, claims.note),
      many: async (inputs) => {
        const rows = await queryPrepared(
          pool,
          statements.claim,
          columns(inputs.map(claimValues), 16),
        );
        const results = rows.map((row) => toClaimResult(row));
        for (const claimed of results) claims.note(claimed);
        return results;
      },
      identity: scopedId,
      // The batch claim answers a key's later claims as a claim right after the first would.
      sharesIdentity: true,
      maxSize: MAX_BATCH,
      maxInFlight: claims.limit,
      load: load.at(() => (claims.reading() ? connections : WRITING_LIGHT_LOAD)),
      failsEveryInput: isOutOfReach,
      stalledAfterMs: STALLED_SLOT_MS,
    }),
    complete: createBatcher<CompletionInput, boolean>({
      one: (input) => completeKeyPrepared(pool, tables, input),
      many: async (inputs) => {
        const rows = await queryPrepared(
          pool,
          statements.complete,
          columns(inputs.map(completionValues), 9),
        );
        return rows.map((row) => completedOf(row));
      },
      identity: scopedId,
      // Two completions of one key are two attempts, one of them fenced out: one at a time.
      sharesIdentity: false,
      maxSize: MAX_BATCH,
      maxInFlight: WRITING_IN_FLIGHT,
      load: load.at(() => WRITING_LIGHT_LOAD),
      failsEveryInput: isOutOfReach,
      stalledAfterMs: STALLED_SLOT_MS,
    }),
  };
}
