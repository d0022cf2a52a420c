import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChargeEngine } from '../../src/index.js';
import {
  createFakeProvider,
  reconcile,
  type FakeProvider,
  type ObservedResponse,
} from '../../src/testing/index.js';
import { aKey, aRequest } from '../support/charges.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/**
 * A merchant of its own with money moved every way: a captured charge refunded twice and refused
 * a third refund past what is left, and an authorization captured in part, refused a second
 * capture, refunded once and refused a refund past the capture. The fake does not dedupe, so a
 * test can make the provider move money under a key a second time.
 */
async function movedMoney(merchantId: string) {
  const provider = createFakeProvider({ dedupe: false });
  const engine = createChargeEngine({ pool: db.pgPool, provider });
  const seen: ObservedResponse[] = [];
  const keep = <T extends { body: string }>(key: string, outcome: T): T => {
    seen.push({ merchantId, key, body: outcome.body });
    return outcome;
  };
  const send = {
    charge: async (request: Parameters<typeof engine.processCharge>[1]) => {
      const key = aKey();
      return keep(key, await engine.processCharge(key, request));
    },
    refund: async (chargeId: string, amountMinor: number) => {
      const key = aKey();
      return keep(key, await engine.processRefund(key, { merchantId, chargeId, amountMinor }));
    },
    capture: async (chargeId: string, amountMinor?: number) => {
      const key = aKey();
      const amount = amountMinor === undefined ? {} : { amountMinor };
      return keep(key, await engine.processCapture(key, { merchantId, chargeId, ...amount }));
    },
  };
  const captured = await send.charge(aRequest({ merchantId, amountMinor: 2_000 }));
  const refunds = [
    await send.refund(captured.chargeId, 500),
    await send.refund(captured.chargeId, 1_800),
    await send.refund(captured.chargeId, 700),
  ];
  const authorized = await send.charge(
    aRequest({ merchantId, amountMinor: 3_000, capture: false }),
  );
  const captures = [
    await send.capture(authorized.chargeId, 2_000),
    await send.capture(authorized.chargeId),
  ];
  const laterRefunds = [
    await send.refund(authorized.chargeId, 1_500),
    await send.refund(authorized.chargeId, 600),
  ];
  await engine.close();
  return { provider, captured, authorized, refunds, captures, laterRefunds, seen };
}

function check(provider: FakeProvider, merchantId: string, seen: ObservedResponse[]) {
  return reconcile({
    pool: db.pgPool,
    providerLedger: provider.ledger(),
    merchantIds: [merchantId],
    ledgerIsOnlyTheirs: true,
    expectFinished: true,
    observations: seen,
    movementLedger: { refunds: provider.refundLedger(), captures: provider.captureLedger() },
  });
}

const kinds = (report: { violations: Array<{ kind: string }> }) =>
  report.violations.map((v) => v.kind).sort();

describe('reconcile, refunds and captures', () => {
  it('finds nothing wrong when money moved every way, refusals included', async () => {
    const run = await movedMoney('m_recmv_clean');
    expect(run.refunds.map((r) => r.status)).toEqual(['succeeded', 'refused', 'succeeded']);
    expect(run.captures.map((c) => c.status)).toEqual(['succeeded', 'refused']);
    expect(run.laterRefunds.map((r) => r.status)).toEqual(['succeeded', 'refused']);

    const report = await check(run.provider, 'm_recmv_clean', run.seen);
    expect(report.violations).toEqual([]);
    expect(report.checked).toMatchObject({ providerMovements: 4, localMovements: 7 });
  });

  it('finds a key under which the provider refunded twice, and the totals it broke', async () => {
    const merchantId = 'm_recmv_double';
    const run = await movedMoney(merchantId);
    const first = run.provider.refundLedger()[0]!;
    // The provider refunds under the same key again, as it would once its window expired.
    await run.provider.createRefund(
      {
        providerKey: first.providerKey,
        merchantId,
        refundId: run.refunds[0]!.refundId,
        chargeId: run.captured.chargeId,
        providerChargeId: first.providerChargeId,
        amountMinor: first.amountMinor,
        currency: first.currency,
      },
      { signal: AbortSignal.timeout(1_000) },
    );

    const report = await check(run.provider, merchantId, run.seen);
    expect(kinds(report)).toEqual(['double_movement', 'totals_mismatch']);
    expect(report.violations).toContainEqual(
      expect.objectContaining({
        kind: 'double_movement',
        movement: 'refund',
        providerKey: first.providerKey,
      }),
    );
    expect(report.violations).toContainEqual(
      expect.objectContaining({
        kind: 'totals_mismatch',
        chargeId: run.captured.chargeId,
        detail: 'refunded 1200, the provider 1700',
      }),
    );
  });

  it("finds a charge row whose refunded total is not the provider's", async () => {
    const merchantId = 'm_recmv_total';
    const run = await movedMoney(merchantId);
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET refunded_minor = refunded_minor - 100
      WHERE merchant_id = ${merchantId} AND id = ${run.captured.chargeId}::uuid`);

    const report = await check(run.provider, merchantId, run.seen);
    expect(report.violations).toEqual([
      {
        kind: 'totals_mismatch',
        merchantId,
        chargeId: run.captured.chargeId,
        detail: 'refunded 1100, the provider 1200',
      },
    ]);
  });

  it('finds a reservation left held once everything settled', async () => {
    const merchantId = 'm_recmv_held';
    const run = await movedMoney(merchantId);
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET refund_reserved_minor = 300
      WHERE merchant_id = ${merchantId} AND id = ${run.authorized.chargeId}::uuid`);

    const report = await check(run.provider, merchantId, run.seen);
    expect(kinds(report)).toEqual(['reservation_held']);
    expect(report.violations[0]).toMatchObject({ chargeId: run.authorized.chargeId });
  });

  it('finds a stored outcome the provider disagrees with', async () => {
    const merchantId = 'm_recmv_outcome';
    const run = await movedMoney(merchantId);
    // Recorded as cancelled, although the provider refunded it.
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.movements} SET status = 'cancelled'
      WHERE merchant_id = ${merchantId} AND id = ${run.refunds[2]!.refundId}::uuid`);

    const report = await check(run.provider, merchantId, run.seen);
    expect(report.violations).toContainEqual(
      expect.objectContaining({
        kind: 'movement_mismatch',
        movement: 'refund',
        movementId: run.refunds[2]!.refundId,
      }),
    );
  });

  it('finds an authorization captured twice, and money moved under no key of ours', async () => {
    const merchantId = 'm_recmv_capture';
    const run = await movedMoney(merchantId);
    const ledger = { refunds: run.provider.refundLedger(), captures: run.provider.captureLedger() };
    const capture = ledger.captures.find((c) => c.status === 'succeeded')!;
    // A second capture, under a key chargeonce never used, past the authorization of 3000.
    const stray = { ...capture, id: 'cap_stray', providerKey: randomUUID(), amountMinor: 1_500 };

    const report = await reconcile({
      pool: db.pgPool,
      providerLedger: run.provider.ledger(),
      merchantIds: [merchantId],
      ledgerIsOnlyTheirs: true,
      expectFinished: true,
      movementLedger: { ...ledger, captures: [...ledger.captures, stray] },
    });
    expect(kinds(report)).toEqual([
      'captured_twice',
      'lost_movement',
      'over_capture',
      'totals_mismatch',
    ]);
    expect(report.violations).toContainEqual({
      kind: 'captured_twice',
      providerChargeId: capture.providerChargeId,
      captureIds: [capture.id, 'cap_stray'],
    });
  });
});
