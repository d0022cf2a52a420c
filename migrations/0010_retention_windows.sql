-- chargeonce schema, version 10: how long each operation's engines promised to keep keys.
--
-- Engines of several operations (and their refunds and captures) may share one schema, each with
-- its own retentionMs and tombstoneRetentionMs, and any engine's reaper reaps every key of the
-- schema. A reaper that used only its own windows would reap another engine's keys before that
-- engine's callers stopped relying on them: a retry after the tombstone was purged charges again.
-- So every engine records its windows here when it starts (for its operation, never lowering a
-- window already recorded), and a reaper keeps every key as long as the longest of them.
CREATE TABLE retention_windows (
  operation              text        PRIMARY KEY,
  retention_ms           bigint      NOT NULL CHECK (retention_ms > 0),
  tombstone_retention_ms bigint      NOT NULL CHECK (tombstone_retention_ms > 0),
  updated_at             timestamptz NOT NULL DEFAULT now()
);
