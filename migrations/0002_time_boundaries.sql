-- chargeonce schema, version 2: tombstones.
-- The reaper no longer deletes a completed key: it drops the stored request and response and
-- leaves the key as an `expired` tombstone (scope, key, fingerprint, charge id, completion time),
-- so a retry that comes after the response was reaped is refused instead of charged again.
-- Tombstones are deleted after a much longer window of their own.

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_recovery_point_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_recovery_point_check
  CHECK (recovery_point IN ('started', 'reserved', 'completed', 'failed', 'expired'));

-- The tombstone purge looks for the oldest tombstones.
CREATE INDEX idempotency_keys_expired_at_idx
  ON idempotency_keys (completed_at)
  WHERE recovery_point = 'expired';
