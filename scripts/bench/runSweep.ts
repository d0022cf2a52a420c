import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import type { ChargeEngine } from '../../src/index.js';
import { tablesIn } from '../../src/store/tables.js';
import { BENCH_MERCHANT } from './benchRequest.js';
import { DESIGN_SCHEMAS } from './Design.js';

/** Keys one `sweep` pass takes; the sweeper's own concurrency is left at its default. */
const SWEEP_LIMIT = 500;

/**
 * Writes `keys` abandoned keys in bulk — at `reserved`, lease and last activity an hour old, as
 * a crashed attempt leaves them (the row shape of test/support/charges.ts seedInterruptedKey) —
 * then times `engine.sweep({ limit })` passes until none is left. The provider has no charge for
 * any of them, so each is cancelled with a stored outcome.
 *
 * @throws when a key is left unfinished or finished other than cancelled.
 */
export async function runSweep(
  engine: ChargeEngine,
  pool: DatabasePool,
  options: { keys: number },
): Promise<{ elapsedMs: number; counts: Record<string, number> }> {
  const tables = tablesIn(DESIGN_SCHEMAS.engine);
  const prefix = `sweep-${randomUUID()}`;
  // The request text is what the engine stores: canonical JSON, keys sorted.
  await pool.query(sql.unsafe`
    WITH keys AS (
      INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until, created_at, updated_at)
      SELECT ${BENCH_MERCHANT}, 'charge', ${prefix} || '-' || i,
        encode(sha256(convert_to(r.request, 'UTF8')), 'hex'), r.request, 'reserved',
        gen_random_uuid(), gen_random_uuid(), now() - interval '1 hour',
        now() - interval '1 hour', now() - interval '1 hour'
      FROM generate_series(1, ${options.keys}) AS i,
        LATERAL (SELECT format(
          '{"amountMinor":%s,"currency":"NGN","customerId":"c_%s","merchantId":"%s"}',
          1000 + i, i % 1000, ${BENCH_MERCHANT}::text) AS request) AS r
      RETURNING charge_id, request::json AS request, created_at
    )
    INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
      provider_key, status, created_at, updated_at)
    SELECT ${BENCH_MERCHANT}, charge_id, request->>'customerId',
      (request->>'amountMinor')::bigint, 'NGN', 'sw_' || charge_id, 'reserved', created_at,
      created_at
    FROM keys`);
  // Autovacuum would analyze a table that just grew by this much before long.
  await pool.query(sql.unsafe`ANALYZE ${tables.keys}`);

  const counts: Record<string, number> = {};
  const start = performance.now();
  for (;;) {
    const pass = await engine.sweep({ limit: SWEEP_LIMIT });
    for (const [name, n] of Object.entries(pass)) counts[name] = (counts[name] ?? 0) + n;
    if (pass.examined === 0) break;
  }
  const elapsedMs = performance.now() - start;

  const left = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${tables.keys}
    WHERE key LIKE ${`${prefix}-%`} AND recovery_point <> 'completed'`);
  if (left !== 0 || counts.cancelled !== options.keys) {
    throw new Error(
      `sweep left ${left} of ${options.keys} keys unfinished: ${JSON.stringify(counts)}`,
    );
  }
  return { elapsedMs, counts };
}
