-- chargeonce schema, version 9: autovacuum first analyzes these tables once they hold about a
-- thousand rows, not fifty.
--
-- Why: a connection keeps the plan it made for a prepared statement (its generic plan) until the
-- table is analyzed again. Measured on PostgreSQL 18, the hot statements' generic plans on these
-- tables analyzed at 60 rows were sequential scans; at 500 rows and more, primary-key lookups.
-- Autovacuum analyzes a table after 50 changes by default, and then at most once a naptime (a
-- minute): a new deployment busy from its first minute would scan its growing tables on every
-- call for that minute. Never analyzed, a table is assumed not to be tiny, and the plans are the
-- primary-key lookups, until there is enough in it for its statistics to say so too.
ALTER TABLE idempotency_keys SET (autovacuum_analyze_threshold = 1000);
ALTER TABLE charges SET (autovacuum_analyze_threshold = 1000);
ALTER TABLE movements SET (autovacuum_analyze_threshold = 1000);
