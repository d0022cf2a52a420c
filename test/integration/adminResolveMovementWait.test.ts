import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  ProviderAnswerInvalidError,
  StoreUnavailableError,
  type ChargeEngine,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aKey, answerOf, aSucceededCharge } from '../support/charges.js';
import { aKeyHolder } from '../support/keyHolder.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

// A person's resolve of a parked refund writes the charge's row, as the engine's completion does,
// and waits there behind a sibling refund whose `complete` hook holds it for a second at most:
// then it fails, nothing written, the key still parked, rather than hanging the command.

let db: TestDatabase;
let engine: ChargeEngine;
const fake = createFakeProvider();
const merchantId = 'm_resolve_wait';
/** The `lock_timeout` each run of the engine's refund `complete` hook saw. */
const seenLockTimeouts: unknown[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({
    pool: db.pgPool,
    provider: fake,
    hooks: {
      refund: {
        complete: async (tx) => {
          const { rows } = await tx.query("SELECT current_setting('lock_timeout') AS t");
          seenLockTimeouts.push((rows[0] as { t?: unknown } | undefined)?.t);
        },
      },
    },
  });
});
afterAll(async () => {
  await engine.close();
  await db.drop();
});

const person = { actor: 'ada@example.com', reason: 'provider dashboard, ticket OPS-9' };

async function auditCount(key: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM ${db.tables.adminActions}
    WHERE merchant_id = ${merchantId} AND key = ${key}`);
}

/** A refund of 400 of a fresh charge of 1,000, parked on an answer that could not be trusted. */
async function aParkedRefund() {
  const chargeId = await aSucceededCharge(db.pgPool, fake, merchantId);
  const key = aKey();
  fake.failNextRefund('malformed');
  await expect(
    engine.processRefund(key, { merchantId, chargeId, amountMinor: 400 }),
  ).rejects.toBeInstanceOf(ProviderAnswerInvalidError);
  // What the person finds in the provider's dashboard: the refund was made.
  const providerRefundId = fake.refundLedger().at(-1)!.id;
  return { chargeId, key, providerRefundId };
}

describe("resolve of a parked refund behind a sibling that holds the charge's row", () => {
  it('fails after a second with nothing written, and goes through once the row is free', async () => {
    const parked = await aParkedRefund();
    const holder = aKeyHolder(db.pgPool, 'refund.complete', { provider: fake });
    const sibling = holder.engine.processRefund(aKey(), {
      merchantId,
      chargeId: parked.chargeId,
      amountMinor: 300,
    });
    const resolution = {
      merchantId,
      key: parked.key,
      operation: 'refund',
      outcome: 'succeeded',
      providerRefundId: parked.providerRefundId,
      ...person,
    } as const;
    try {
      await holder.holding(1);
      const refused = await answerOf(engine.resolve(resolution));
      expect(refused).toBeInstanceOf(StoreUnavailableError);
      expect(String((refused as Error).cause)).toMatch(/lock timeout/);
      // Rolled back whole: still parked, holding its 400, and no audit of a resolve that was not.
      const seen = await engine.inspect({ merchantId, key: parked.key, operation: 'refund' });
      expect(seen).toMatchObject({ recoveryPoint: 'failed' });
      expect(seen?.movement).toMatchObject({ status: 'reserved', providerMovementId: null });
      expect(seen?.movement?.chargeTotals).toMatchObject({
        refundReservedMinor: 700,
        refundedMinor: 0,
      });
      expect(await auditCount(parked.key)).toBe(0);
      expect(seenLockTimeouts).toEqual([]);
    } finally {
      holder.release();
    }
    expect(await sibling).toMatchObject({ status: 'succeeded' });

    const resolved = await engine.resolve(resolution);
    expect(resolved.outcome).toMatchObject({ status: 'succeeded', replayed: false });
    const seen = await engine.inspect({ merchantId, key: parked.key, operation: 'refund' });
    expect(seen?.movement?.chargeTotals).toMatchObject({
      refundReservedMinor: 0,
      refundedMinor: 700,
    });
    expect(await auditCount(parked.key)).toBe(1);
    // The hook ran with the session's lock timeout (none) put back.
    expect(seenLockTimeouts).toEqual(['0']);
  });
});
