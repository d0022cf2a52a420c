-- chargeonce schema, version 3: a claim reads before it writes.
-- claim_key now looks for the key first and tries the INSERT only when there is none, so a
-- replay, a 409 and a 422 cost one index read on the server instead of a failed speculative
-- insert. It also returns the stored canonical request when the fingerprints differ, so a 422
-- names the fields that differ without a second round trip (and a matching request never reads
-- the request text).

DROP FUNCTION claim_key(text, text, text, text, text, boolean, uuid, uuid, float8, text, bigint,
  text, text, jsonb, text);

CREATE FUNCTION claim_key(
  p_merchant_id text, p_operation text, p_key text, p_request_hash text, p_request text,
  p_reserve boolean, p_charge_id uuid, p_lock_token uuid, p_lease_ms float8,
  p_customer_id text, p_amount_minor bigint, p_currency text, p_description text,
  p_metadata jsonb, p_provider_key text)
RETURNS TABLE (
  claimed boolean, request_hash text, recovery_point text, charge_id text, lease_held boolean,
  lease_remaining_ms integer, attempts integer, response_status integer, response_body text,
  charge_status text, provider_key text, provider_charge_id text, stored_request text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
  -- An existing key: the common case of a retry. RETURN QUERY sets FOUND when it returned a row.
  RETURN QUERY
    SELECT false, k.request_hash, k.recovery_point, k.charge_id::text,
      (k.lock_token IS NOT NULL AND k.locked_until > now()),
      GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::integer,
      k.attempts, k.response_status, k.response_body, c.status, c.provider_key,
      c.provider_charge_id,
      CASE WHEN k.request_hash IS DISTINCT FROM p_request_hash THEN k.request END
    FROM idempotency_keys k
    LEFT JOIN charges c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE k.merchant_id = p_merchant_id AND k.operation = p_operation AND k.key = p_key;
  IF FOUND THEN
    RETURN;
  END IF;
  -- None yet: the primary key is the lock. Of any number of racing claims exactly one inserts.
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
      NULL::integer, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text;
    RETURN;
  END IF;
  -- Lost the race: each statement of a PL/pgSQL function takes a fresh snapshot, so the
  -- winner's committed row is visible here (unless it was deleted meanwhile: no row).
  RETURN QUERY
    SELECT false, k.request_hash, k.recovery_point, k.charge_id::text,
      (k.lock_token IS NOT NULL AND k.locked_until > now()),
      GREATEST(0, ceil(extract(epoch FROM (k.locked_until - now())) * 1000))::integer,
      k.attempts, k.response_status, k.response_body, c.status, c.provider_key,
      c.provider_charge_id,
      CASE WHEN k.request_hash IS DISTINCT FROM p_request_hash THEN k.request END
    FROM idempotency_keys k
    LEFT JOIN charges c ON c.merchant_id = k.merchant_id AND c.id = k.charge_id
    WHERE k.merchant_id = p_merchant_id AND k.operation = p_operation AND k.key = p_key;
END
$$;
