-- chargeonce schema, version 3: the hot statements are plain SQL.
-- The claim and the completion are now sent as statements (named prepared statements on a
-- node-postgres pool, planned once per connection), not as calls of the PL/pgSQL functions of
-- version 1: a function call cost more on the server than the statement it wraps, and the claim
-- now reads the key before it tries to insert it. The functions are no longer called.

DROP FUNCTION claim_key(text, text, text, text, text, boolean, uuid, uuid, float8, text, bigint,
  text, text, jsonb, text);

DROP FUNCTION complete_key(text, text, text, uuid, text, text, text, integer, text);
