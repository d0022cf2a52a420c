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
import { isStoreUnavailable } from './storeErrors.js';
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
 * Batches in flight at once, per statement. Batches form only when more calls come than
 * connections could serve (see `SharedLoad`): until then each call goes out alone, at once, and
 * PostgreSQL already flushes the WAL of concurrent commits together. Past it, a few large batches
 * cost less per key than many small ones, and what waits for a slot joins the next batch rather
 * than a statement of its own.
 *
 * Statements that write (completions, claims of new keys) go one at a time: each commit waits
 * for its WAL flush, and one larger batch per flush does at least as much as two smaller ones
 * contending for the CPU (fresh charges at 32 callers on a 10-connection pool, measured side by
 * side: 1.1× the throughput of two at a time and 1.2× that of three while the first caller back
 * went out alone; as much as two since calls are gathered, see `createBatcher`). Claims that find
 * their keys (replays, 409s, 422s) only read and commit nothing to flush: while most recent claims
 * did, two go at once (replays at 32 callers: 1.1–1.2× the throughput of one at a time; three did
 * no better than one).
 * On a pool of two or three connections, one each, so the two statements never wait for a
 * connection.
 */
const WRITING_IN_FLIGHT = 1;
const READING_IN_FLIGHT = 2;

/** How much one claim moves the running share of claims that found their key: about the last 64. */
const SHARE_WEIGHT = 1 / 64;

/** The claims' limit of batches in flight, from the share of recent claims that only read. */
export function claimsInFlight(connections: number): {
  limit: () => number;
  note: (results: readonly (ClaimResult | null)[]) => void;
} {
  const reading = connections >= 4 ? READING_IN_FLIGHT : WRITING_IN_FLIGHT;
  let readShare = 0;
  return {
    limit: () => (readShare > 0.5 ? reading : WRITING_IN_FLIGHT),
    // Batches only: the limit matters only while calls are batched, and a lone claim's promise
    // is left as it is (a charge at low concurrency pays nothing for this).
    note: (results) => {
      for (const result of results) {
        readShare += ((result?.kind === 'existing' ? 1 : 0) - readShare) * SHARE_WEIGHT;
      }
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
  const load = createSharedLoad(connections);
  return {
    claim: createBatcher<ClaimInput, ClaimResult | null>({
      one: (input) => claimKeyPrepared(pool, tables, input),
      many: async (inputs) => {
        // Written out, not spread: see claimKeyPrepared.
        const result = await pool.query({
          name: statements.claim.name,
          text: statements.claim.text,
          values: columns(inputs.map(claimValues), 16),
        });
        const results = result.rows.map((row) => toClaimResult(row));
        claims.note(results);
        return results;
      },
      identity: scopedId,
      // The batch claim answers a key's later claims as a claim right after the first would.
      sharesIdentity: true,
      maxSize: MAX_BATCH,
      maxInFlight: claims.limit,
      load,
      failsEveryInput: isStoreUnavailable,
    }),
    complete: createBatcher<CompletionInput, boolean>({
      one: (input) => completeKeyPrepared(pool, tables, input),
      many: async (inputs) => {
        // Written out, not spread: see claimKeyPrepared.
        const result = await pool.query({
          name: statements.complete.name,
          text: statements.complete.text,
          values: columns(inputs.map(completionValues), 9),
        });
        return result.rows.map((row) => completedOf(row));
      },
      identity: scopedId,
      // Two completions of one key are two attempts, one of them fenced out: one at a time.
      sharesIdentity: false,
      maxSize: MAX_BATCH,
      maxInFlight: WRITING_IN_FLIGHT,
      load,
      failsEveryInput: isStoreUnavailable,
    }),
  };
}
