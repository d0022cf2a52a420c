-- chargeonce schema, version 6: refunds and captures, each run once per key like a charge.
-- A refund or a capture is a "movement" of money on a charge. Its key (operation `refund` or
-- `capture`) guards one movements row, as a charge's key guards one charges row; the key's
-- charge_id column holds the movement's id.
--
-- The invariants are held on the charge's own row, in the commit that reserves the movement:
-- the reservation is one conditional UPDATE of the charge (its row lock orders racing keys, and
-- each one re-checks the condition on the row as the previous one left it), so the refunds of a
-- charge, succeeded and in doubt together, can never exceed what was captured, and an
-- authorization is captured at most once. The CHECK constraints below say the same again.

-- Made with `capture: false`: authorized, the money taken later by a capture.
ALTER TABLE charges ADD COLUMN authorized_only boolean NOT NULL DEFAULT false;
-- What a capture took (authorized-only charges; null until then).
ALTER TABLE charges ADD COLUMN captured_minor bigint;
-- A capture reserved and not yet finished: no second capture may start.
ALTER TABLE charges ADD COLUMN capture_reserved_minor bigint;
-- Refunds reserved and not yet finished (in doubt included), and refunds the provider made.
ALTER TABLE charges ADD COLUMN refund_reserved_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN refunded_minor bigint NOT NULL DEFAULT 0;

ALTER TABLE charges ADD CONSTRAINT charges_capture_within_authorization CHECK (
  (captured_minor IS NULL OR (authorized_only AND captured_minor > 0
    AND captured_minor <= amount_minor))
  AND (capture_reserved_minor IS NULL OR (authorized_only AND captured_minor IS NULL
    AND capture_reserved_minor > 0 AND capture_reserved_minor <= amount_minor)));
ALTER TABLE charges ADD CONSTRAINT charges_refunds_within_capture CHECK (
  refund_reserved_minor >= 0 AND refunded_minor >= 0
  AND refunded_minor + refund_reserved_minor
    <= CASE WHEN authorized_only THEN coalesce(captured_minor, 0) ELSE amount_minor END);

CREATE TABLE movements (
  merchant_id       text        NOT NULL,
  id                uuid        NOT NULL,
  kind              text        NOT NULL,
  -- The charge moved on (chargeonce's id). No foreign key: a refund of an unknown charge is a
  -- stored refusal, with its row.
  charge_id         uuid        NOT NULL,
  -- What was asked (a capture of "all" stores the authorized amount), and in what currency;
  -- null when the charge was not found.
  amount_minor      bigint,
  currency          text,
  reason            text,
  provider_key      text        NOT NULL,
  -- The provider's id of the charge, read when the movement was reserved.
  provider_charge_id text,
  -- The provider's id of the refund or capture.
  provider_movement_id text,
  -- reserved: the amount is held on the charge until the movement ends.
  status            text        NOT NULL,
  failure_code      text,
  refusal           text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, id),
  CONSTRAINT movements_provider_key_key UNIQUE (merchant_id, provider_key),
  CONSTRAINT movements_kind_check CHECK (kind IN ('refund', 'capture')),
  CONSTRAINT movements_status_check
    CHECK (status IN ('reserved', 'succeeded', 'failed', 'refused', 'cancelled')),
  CONSTRAINT movements_refused_has_refusal CHECK ((status = 'refused') = (refusal IS NOT NULL))
);

-- The movements of one charge (reconciliation, inspection).
CREATE INDEX movements_charge_idx ON movements (merchant_id, charge_id);
