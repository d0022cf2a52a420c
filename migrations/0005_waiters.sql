-- chargeonce schema, version 5: callers waiting on a key in progress are woken on its commit.
-- A caller that meets a key another attempt holds, and chooses to wait (`inProgress: { waitMs }`),
-- marks the key; the completion that finds the mark sends one NOTIFY with the key, in its own
-- statement and commit. A key nobody waits on is completed as before, without a NOTIFY (a NOTIFY
-- serializes the commits that send one, so only the keys that need it pay for it).
ALTER TABLE idempotency_keys ADD COLUMN has_waiters boolean NOT NULL DEFAULT false;
