import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import type { DataPoint } from '@opentelemetry/sdk-metrics';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { useTelemetrySdk } from '../support/telemetrySdk.js';
import { aKey, aRequest, seedInterruptedKey } from '../support/charges.js';

// The unfinished-key gauges, in a database of this file's own: exact counts.

const sdk = useTelemetrySdk();
const merchantId = 'm_key_gauges';

/** The unfinished-key gauge's points, by recovery point. */
async function unfinished(): Promise<Record<string, number>> {
  const points = ((await sdk.metric('chargeonce.keys.unfinished'))?.dataPoints ??
    []) as DataPoint<number>[];
  return Object.fromEntries(
    points.map((p) => [p.attributes['chargeonce.recovery_point'] as string, p.value]),
  );
}

async function oldestAgeSeconds(): Promise<number[]> {
  const points = ((await sdk.metric('chargeonce.keys.oldest_unfinished_age'))?.dataPoints ??
    []) as DataPoint<number>[];
  return points.map((p) => p.value);
}

describe('unfinished-key gauges', () => {
  it('count keys at started, reserved and failed and age the oldest, from one sample per window', async () => {
    const { db } = sdk;
    // Keys put in place by an engine that records nothing: the gauges are the observing one's.
    // One of them parked (the provider down at its only attempt), one completed (in no gauge).
    const provider = createFakeProvider();
    const setup = createChargeEngine({
      pool: db.pgPool,
      provider,
      sweepGraceMs: 0,
      maxAttempts: 1,
      telemetry: false,
    });
    await seedInterruptedKey(db.pool, db.tables, aKey(), aRequest({ merchantId }), 'reserved');
    provider.outage(10);
    expect((await setup.sweep()).failed).toBe(1);
    provider.outage(0);
    await setup.processCharge(aKey(), aRequest({ merchantId }));
    const oldest = aKey();
    await seedInterruptedKey(db.pool, db.tables, oldest, aRequest({ merchantId }), 'started');
    await seedInterruptedKey(db.pool, db.tables, aKey(), aRequest({ merchantId }), 'started');
    await seedInterruptedKey(db.pool, db.tables, aKey(), aRequest({ merchantId }), 'reserved');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET created_at = now() - interval '1 hour'
      WHERE merchant_id = ${merchantId} AND key = ${oldest}`);

    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      telemetry: { meter: sdk.meter() },
    });
    // Its first call waits for its telemetry to be set up; a completed key is in no gauge.
    await engine.processCharge(aKey(), aRequest({ merchantId }));
    expect(await unfinished()).toEqual({ started: 2, reserved: 1, failed: 1 });
    const [age] = await oldestAgeSeconds();
    expect(age).toBeGreaterThanOrEqual(3600);
    expect(age).toBeLessThan(3600 + 600);

    // A key claimed since is not seen by the next collection: the sample is less than 15 s old.
    await seedInterruptedKey(db.pool, db.tables, aKey(), aRequest({ merchantId }), 'started');
    expect(await unfinished()).toEqual({ started: 2, reserved: 1, failed: 1 });
    // status() reads the table now, and sees it.
    expect((await engine.status()).byRecoveryPoint.started).toBe(3);

    await engine.close();
    await setup.close();
  });
});
