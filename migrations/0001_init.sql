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

-- The two statements of a fresh charge, as functions. One call is still one statement, one round
-- trip and one commit; but PL/pgSQL keeps each connection's plans, where a statement sent as text
-- is parsed and planned again on every call (measured: two thirds of a replay's database time).
-- `SET search_path FROM CURRENT` pins the schema this migration runs in.

-- Claims the key (and, with p_reserve, writes the charge intent in the same transaction), or
-- returns the existing key's state. Each statement of a PL/pgSQL function takes a fresh snapshot,
-- so a key whose claim committed while this INSERT waited on it is visible to the SELECT below.
CREATE FUNCTION claim_key(
  p_merchant_id text, p_operation text, p_key text, p_request_hash text, p_request text,
  p_reserve boolean, p_charge_id uuid, p_lock_token uuid, p_lease_ms float8,
  p_customer_id text, p_amount_minor bigint, p_currency text, p_description text,
  p_metadata jsonb, p_provider_key text)
RETURNS TABLE (
  claimed boolean, request_hash text, recovery_point text, charge_id text, lease_held boolean,
  lease_remaining_ms integer, attempts integer, response_status integer, response_body text,
  charge_status text, provider_key text, provider_charge_id text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
  INSERT INTO idempotency_keys (merchant_id, operation, key, request_hash, request,
    recovery_point, charge_id, lock_token, locked_until)
  VALUES (p_merchant_id, p_operation, p_key, p_request_hash, p_request,
    CASE WHEN p_reserve THEN 'reserved' ELSE 'started' END, p_charge_id, p_lock_token,
    now() + p_lease_ms * interval '1 millisecond')
  ON CONFLICT (merchant_id, operation, key) DO NOTHING;
  IF FOUND THEN
    IF p_reserve THEN
      INSERT INTO charges (merchant_id, id, customer_id, amount_minor, currency, description,
        metadata, provider_key, status)
      VALUES (p_merchant_id, p_charge_id, p_customer_id, p_amount_minor, p_currency,
        p_description, p_metadata, p_provider_key, 'reserved');
    END IF;
    RETURN QUERY SELECT true, NULL::text, NULL::text, NULL::text, NULL::boolean, NULL::integer,
      NULL::integer, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::text;
    RETURN;
  END IF;
  RETURN QUERY
    SELECT false, k.request_hash, k.recovery_point, k.charge_id::text,
      (k.lock_token IS NOT NULL AND k.locked_until > now()),
      GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::integer,
      k.attempts, k.response_status, k.response_body, c.status, c.provider_key,
      c.provider_charge_id
    FROM idempotency_keys k
    LEFT JOIN charges c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE k.merchant_id = p_merchant_id AND k.operation = p_operation AND k.key = p_key;
END
$$;

-- Records the outcome on the charge, stores the response, completes the key and releases the
-- lease, fenced by the lock token: returns false (and writes nothing) for a zombie attempt.
CREATE FUNCTION complete_key(
  p_merchant_id text, p_operation text, p_key text, p_lock_token uuid, p_charge_status text,
  p_provider_charge_id text, p_decline_code text, p_response_status integer,
  p_response_body text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
  v_charge_id uuid;
BEGIN
  UPDATE idempotency_keys
  SET recovery_point = 'completed', response_status = p_response_status,
    response_body = p_response_body, lock_token = NULL, locked_until = NULL,
    completed_at = now(), updated_at = now()
  WHERE merchant_id = p_merchant_id AND operation = p_operation AND key = p_key
    AND lock_token = p_lock_token AND recovery_point IN ('started', 'reserved')
  RETURNING charge_id INTO v_charge_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE charges
  SET status = p_charge_status, provider_charge_id = p_provider_charge_id,
    decline_code = p_decline_code, updated_at = now()
  WHERE merchant_id = p_merchant_id AND id = v_charge_id;
  RETURN true;
END
$$;
