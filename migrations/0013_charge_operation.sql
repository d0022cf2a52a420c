-- chargeonce schema, version 13: a charge records the operation it was made under.
--
-- Engines of several operations may share a schema, each with its own provider (or account).
-- A refund or capture of a charge must go through the provider that made the charge, and so
-- must the sweeper's lookup of one left unfinished: another engine's provider has never heard of
-- it, and its sweeper, finding nothing, cancelled a refund that had gone through. A charge's
-- refunds and captures now go through engines of its operation only: another engine's claim
-- reads the charge as not found, and another engine's sweeper leaves its movements alone.
ALTER TABLE charges ADD COLUMN operation text;

-- Charges made before this version, from their keys (tombstones keep the charge id). A charge
-- whose key is gone stays null: any engine may refund or capture it, as before.
UPDATE charges c SET operation = k.operation
FROM idempotency_keys k
WHERE k.merchant_id = c.merchant_id AND k.charge_id = c.id
  AND k.operation NOT IN ('refund', 'capture');
