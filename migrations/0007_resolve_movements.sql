-- chargeonce schema, version 7: a person may resolve a parked refund or capture, as a charge.
-- Its audit row records the outcome in a refund's or capture's own terms: `failed` (the provider
-- refused it) instead of a charge's `declined`, the provider's refund or capture id, and the
-- provider's failure code. Only admin actions write here: nothing on a charge's path changes.

-- The provider's refund or capture id, and its failure code, a person resolved the key with.
ALTER TABLE admin_actions ADD COLUMN provider_movement_id text;
ALTER TABLE admin_actions ADD COLUMN failure_code text;

-- A refund's or capture's outcomes are succeeded, failed and cancelled; a charge's stay as they
-- were. The operation names `refund` and `capture` belong to them (an engine cannot take them).
ALTER TABLE admin_actions DROP CONSTRAINT admin_actions_action_check;
ALTER TABLE admin_actions ADD CONSTRAINT admin_actions_action_check CHECK (
  (action = 'resolve' AND actor IS NOT NULL AND reason IS NOT NULL
    AND CASE WHEN operation IN ('refund', 'capture')
      THEN result IN ('succeeded', 'failed', 'cancelled')
        AND provider_charge_id IS NULL AND decline_code IS NULL
      ELSE result IN ('succeeded', 'declined', 'cancelled')
        AND provider_movement_id IS NULL AND failure_code IS NULL
    END)
  OR (action = 'requeue' AND result IN ('reserved', 'started')));
