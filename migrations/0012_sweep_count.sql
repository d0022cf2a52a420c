-- chargeonce schema, version 12: the sweeper counts its own attempts at a key.
--
-- The sweeper parks a key at `reserved` it cannot finish (the provider cannot say whether it
-- charged, or a hook keeps failing) after `maxAttempts`. Counted from `attempts`, which a
-- client's retries raise too, a one-minute provider outage with a client's default retries
-- parked keys at their first sweep, charges that went through included, until a person
-- requeued them. A client retry during an outage says nothing about whether the provider will
-- answer later; the sweeper's own passes, spaced by its grace, do. So they are counted here,
-- and requeue sets the count back to 0.
ALTER TABLE idempotency_keys ADD COLUMN sweeps integer NOT NULL DEFAULT 0;
