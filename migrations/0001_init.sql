-- chargeonce schema, version 1.
-- Runs with search_path set to the target schema, so names are unqualified.
-- Every primary and unique key starts with merchant_id and every phase transaction touches one
-- merchant: the tables can be distributed by merchant_id when one database is no longer enough.

-- One row per idempotency key, scoped by merchant and operation. The primary key is the lock:
-- a claim is INSERT ... ON CONFLICT DO NOTHING.
CREATE TABLE idempotency_keys (
  merchant_id     text        NOT NULL,
  operation       text        NOT NULL,
  key             text        NOT NULL,
  -- sha256 of the canonical request; a different request under the same key is refused.
  request_hash    text        NOT NULL,
  -- The canonical request as text, so a recovery worker can resume without the caller.
  request         text        NOT NULL,
  recovery_point  text        NOT NULL,
  -- The local charge this key guards, chosen at claim time.
  charge_id       uuid        NOT NULL,
  -- The lease: an attempt owns the key while locked_until is in the future. lock_token fences
  -- every write, so an attempt whose lease was taken over cannot write any more.
  lock_token      uuid,
  locked_until    timestamptz,
  attempts        integer     NOT NULL DEFAULT 1,
  -- Why the last attempt stopped short (a provider failure, say), and why a key was marked
  -- `failed`: what a person reads in `listStuck()`.
  last_error      text,
  -- The stored outcome, replayed byte for byte (text, not jsonb: jsonb reorders keys).
  response_status integer,
  response_body   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (merchant_id, operation, key),
  CONSTRAINT idempotency_keys_recovery_point_check
    CHECK (recovery_point IN ('started', 'reserved', 'completed', 'failed')),
  CONSTRAINT idempotency_keys_completed_has_response
    CHECK ((recovery_point = 'completed') = (response_status IS NOT NULL AND response_body IS NOT NULL))
);

-- The sweeper looks for unfinished keys, oldest activity first; the reaper for old completed ones.
CREATE INDEX idempotency_keys_unfinished_idx
  ON idempotency_keys (updated_at)
  WHERE recovery_point IN ('started', 'reserved');
CREATE INDEX idempotency_keys_completed_at_idx
  ON idempotency_keys (completed_at)
  WHERE recovery_point = 'completed';

-- The local intent and result of a charge. Survives the reaper.
CREATE TABLE charges (
  merchant_id        text        NOT NULL,
  id                 uuid        NOT NULL,
  customer_id        text        NOT NULL,
  amount_minor       bigint      NOT NULL CHECK (amount_minor > 0),
  currency           text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  description        text,
  metadata           jsonb,
  provider_key       text        NOT NULL,
  provider_charge_id text,
  status             text        NOT NULL,
  decline_code       text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, id),
  CONSTRAINT charges_provider_key_key UNIQUE (merchant_id, provider_key),
  CONSTRAINT charges_provider_charge_id_key UNIQUE (merchant_id, provider_charge_id),
  CONSTRAINT charges_status_check
    CHECK (status IN ('reserved', 'succeeded', 'declined', 'rejected', 'cancelled'))
);
