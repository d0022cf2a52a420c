import { batchStatements } from '../store/batchStatements.js';
import { hotStatements } from '../store/hotStatements.js';
import type { PgPoolLike, PgQueryConfig } from '../store/pgPoolLike.js';
import { tablesIn } from '../store/tables.js';
import { watchedPool } from '../store/watchedPool.js';

/** How one hot statement went to PostgreSQL: alone, or in batches of several keys. */
export type BatchCounts = {
  /** Statements that carried one key. */
  alone: number;
  /** Statements that carried several keys at once (group commit). */
  batches: number;
  /** Keys those batches carried together. */
  batchedKeys: number;
  /** The most keys one batch carried. */
  largest: number;
};

/** The claims and completions of a process's engines, as they went on the wire. */
export type GroupCommitCounts = { claims: BatchCounts; completions: BatchCounts };

export function emptyGroupCommitCounts(): GroupCommitCounts {
  const empty = (): BatchCounts => ({ alone: 0, batches: 0, batchedKeys: 0, largest: 0 });
  return { claims: empty(), completions: empty() };
}

/** Adds `more` (another process's counts) into `total`. */
export function addGroupCommitCounts(total: GroupCommitCounts, more: GroupCommitCounts): void {
  for (const statement of ['claims', 'completions'] as const) {
    const t = total[statement];
    const m = more[statement];
    t.alone += m.alone;
    t.batches += m.batches;
    t.batchedKeys += m.batchedKeys;
    t.largest = Math.max(t.largest, m.largest);
  }
}

/**
 * A pool that counts the hot statements sent through it, and otherwise is `pool`: the engines
 * of a chaos process share it, so the report can show that group commit really batched. It
 * recognizes the engine's own statements by name, alone (one key) or over arrays (one row per
 * key). `options` is the pool's own object: the engine reads its size, and its waiters' listener
 * connects with its settings.
 */
export function countGroupCommit(
  pool: PgPoolLike,
  schema: string,
): { pool: PgPoolLike; counts: () => GroupCommitCounts } {
  const tables = tablesIn(schema);
  const hot = hotStatements(tables);
  const batch = batchStatements(tables);
  const counts = emptyGroupCommitCounts();
  // The engine's statements by name; any other statement is not counted.
  const counters = new Map<string, (config: PgQueryConfig) => void>([
    [hot.claim.name, () => (counts.claims.alone += 1)],
    [hot.complete.name, () => (counts.completions.alone += 1)],
    [batch.claim.name, (config) => countBatch(counts.claims, config)],
    [batch.complete.name, (config) => countBatch(counts.completions, config)],
  ]);
  return {
    pool: watchedPool(pool, (config) => {
      if (config.name !== undefined) counters.get(config.name)?.(config);
    }),
    counts: () => structuredClone(counts),
  };
}

/** A batch statement's first parameter holds one element per key. */
function countBatch(counts: BatchCounts, config: PgQueryConfig): void {
  const first = config.values?.[0];
  const keys = Array.isArray(first) ? first.length : 0;
  counts.batches += 1;
  counts.batchedKeys += keys;
  counts.largest = Math.max(counts.largest, keys);
}
