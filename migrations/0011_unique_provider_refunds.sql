-- chargeonce schema, version 11: one provider refund is recorded for one refund only.
--
-- Two refunds of a charge resolved by hand with the same provider refund id (a pasted id, twice)
-- both counted toward the charge's refunded total: the books showed money returned twice that
-- the provider returned once. A charge's provider id has been unique per merchant since version
-- 1; a refund's is now too. Captures are left out: a provider without capture objects names a
-- capture by its charge's id, so a failed capture and the one that later succeeds share it (a
-- charge's captured amount is set once, by the charge's own row).
--
-- Fails on a schema that already holds such a pair (only `resolve` could have written one), and
-- then nothing of the upgrade is applied. Find them with (in chargeonce's schema, `chargeonce`
-- unless you chose another):
--   SELECT merchant_id, provider_movement_id, array_agg(id) FROM chargeonce.movements
--   WHERE kind = 'refund' AND provider_movement_id IS NOT NULL
--   GROUP BY 1, 2 HAVING count(*) > 1;
-- and correct the refund that does not match the provider's (its provider_movement_id, and its
-- charge's refunded_minor if it counted money that never moved), then migrate again.
CREATE UNIQUE INDEX movements_provider_refund_id_key
  ON movements (provider_movement_id, merchant_id)
  WHERE kind = 'refund';
