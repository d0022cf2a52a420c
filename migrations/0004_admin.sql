-- chargeonce schema, version 4: what the admin surface (inspect, list, resolve, requeue) needs.
-- Nothing here is written by the claim or the completion, the two statements of every charge:
-- the new column is set only where a key is parked, the new index holds only parked keys (the
-- hot statements never write one), and the audit table is written only by a person's action.
-- A key's history comes from columns that already exist (the key's created_at: claimed; its
-- charge's created_at: reserved; completed_at) and from these.

-- When the key was last parked in `failed`, set where it is parked. Kept after the key leaves
-- `failed`: each resolve or requeue also copies it into its audit row.
ALTER TABLE idempotency_keys ADD COLUMN failed_at timestamptz;

-- What a person did to a key, who and why: resolve (with the outcome) and requeue. Rows stay
-- after the key is reaped or forgotten; `charge_id` tells one use of a key from a later one.
CREATE TABLE admin_actions (
  merchant_id        text        NOT NULL,
  operation          text        NOT NULL,
  key                text        NOT NULL,
  id                 bigint      GENERATED ALWAYS AS IDENTITY,
  charge_id          uuid        NOT NULL,
  action             text        NOT NULL,
  -- resolve: the outcome stored (succeeded, declined, cancelled); requeue: the recovery point the
  -- key went back to (reserved, or started when it had no charge intent).
  result             text        NOT NULL,
  provider_charge_id text,
  decline_code       text,
  actor              text,
  reason             text,
  -- The park this action ended: when, and the reason the key was parked with.
  parked_at          timestamptz,
  parked_reason      text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, operation, key, id),
  CONSTRAINT admin_actions_action_check CHECK (
    (action = 'resolve' AND result IN ('succeeded', 'declined', 'cancelled')
      AND actor IS NOT NULL AND reason IS NOT NULL)
    OR (action = 'requeue' AND result IN ('reserved', 'started')))
);

-- `list` pages through keys in (created_at, merchant_id, operation, key) order. Parked keys get
-- an index of their own, partial so that the hot statements never write to it. Unfinished keys
-- are few and already indexed (idempotency_keys_unfinished_idx); completed keys are not indexed
-- in this order on purpose: such an index would be written by every claim.
CREATE INDEX idempotency_keys_failed_idx
  ON idempotency_keys (created_at, merchant_id, operation, key)
  WHERE recovery_point = 'failed';
