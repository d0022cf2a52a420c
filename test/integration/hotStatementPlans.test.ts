import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchStatements } from '../../src/store/batchStatements.js';
import { hotStatements } from '../../src/store/hotStatements.js';
import { movementStatements } from '../../src/store/movementStatements.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

// The plans PostgreSQL caches for the prepared hot statements (their generic plans) must find a
// charge or a movement by its primary key: a connection keeps a plan made while the tables were
// new and small as they grow, until they are analyzed again. Once, the completion's plan found
// the charge through `charges_provider_charge_id_key` on merchant_id alone, then filtered every
// other charge of the merchant by id: its cost grew with the table until autovacuum analyzed it.

/** Indexes that start with something else than the row's merchant and id. */
const NOT_BY_PRIMARY_KEY = [
  'charges_provider_key_key',
  'charges_provider_charge_id_key',
  'movements_provider_key_key',
  'movements_charge_idx',
];

let db: TestDatabase;
beforeAll(async () => {
  // New tables, never analyzed (as after `migrate`, or TRUNCATE): what a new deployment plans with.
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function genericPlan(text: string): Promise<string> {
  const result = await db.pgPool.query({ text: `EXPLAIN (GENERIC_PLAN) ${text}` });
  return result.rows.map((row) => String(row['QUERY PLAN'])).join('\n');
}

describe('the hot statements’ generic plans', () => {
  it('are not made for tiny tables by autovacuum: the tables are first analyzed at 1,000 changes', async () => {
    // Analyzed at 60 rows, the generic plans were sequential scans, kept until the next analyze.
    const result = await db.pgPool.query({
      text: `SELECT relname, reloptions FROM pg_class
        WHERE relnamespace = $1::regnamespace
          AND relname IN ('idempotency_keys', 'charges', 'movements') ORDER BY relname`,
      values: [db.tables.schema],
    });
    expect(result.rows).toEqual(
      ['charges', 'idempotency_keys', 'movements'].map((relname) => ({
        relname,
        reloptions: ['autovacuum_analyze_threshold=1000'],
      })),
    );
  });

  const statements = () => ({
    ...Object.fromEntries(Object.entries(hotStatements(db.tables)).map(([k, v]) => [k, v.text])),
    ...Object.fromEntries(
      Object.entries(batchStatements(db.tables)).map(([k, v]) => [`batch ${k}`, v.text]),
    ),
    ...Object.fromEntries(
      Object.entries(movementStatements(db.tables)).map(([k, v]) => [`movement ${k}`, v.text]),
    ),
  });

  it('find charges and movements by their primary key, on new tables', async () => {
    const named = statements();
    expect(Object.keys(named)).toHaveLength(6);
    for (const [name, text] of Object.entries(named)) {
      const plan = await genericPlan(text);
      expect(plan, name).toContain('_pkey');
      for (const index of NOT_BY_PRIMARY_KEY) expect(plan, `${name}\n${plan}`).not.toContain(index);
      // A primary key searched by merchant alone reads every row of the merchant.
      expect(plan, `${name}\n${plan}`).not.toMatch(/Index Cond: \(merchant_id = [^()]*\)\n/);
    }
  });
});
