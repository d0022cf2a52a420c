import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  type ChargeOutcome,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest, readCharges } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 20 });
});
afterAll(async () => {
  await db.drop();
});

describe('concurrent attempts on one key', () => {
  it('50 at once make exactly one provider charge; the rest get 409 or the replay', async () => {
    // No provider-side dedupe: a second createCharge would show up as a second ledger entry.
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_storm' });

    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () => engine.processCharge(key, request)),
    );

    expect(provider.ledger()).toHaveLength(1);
    expect(provider.calls.createCharge).toBe(1);
    const outcomes = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    for (const failure of failures) expect(failure).toBeInstanceOf(IdempotencyKeyInUseError);
    const winner = outcomes.find((o) => !o.replayed) as ChargeOutcome;
    for (const o of outcomes) expect(o.body).toBe(winner.body);
    expect(await readCharges(db.pool, db.tables, 'm_storm')).toHaveLength(1);
  });

  it('with inProgress { waitMs }, all 50 get the one outcome', async () => {
    const provider = createFakeProvider({
      dedupe: false,
      beforeAnswer: () => new Promise((resolve) => setTimeout(resolve, 50)),
    });
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      inProgress: { waitMs: 10_000 },
    });
    const key = aKey();

    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () =>
        engine.processCharge(key, aRequest({ merchantId: 'm_wait' })),
      ),
    );

    expect(provider.ledger()).toHaveLength(1);
    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    expect(new Set(outcomes.map((o) => o.body)).size).toBe(1);
  });

  it('with inProgress { waitMs }, answers 409 when the outcome does not come in time', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const provider = createFakeProvider({ beforeAnswer: () => held });
    const waiting = createChargeEngine({ pool: db.pgPool, provider, inProgress: { waitMs: 150 } });
    const key = aKey();
    const first = waiting.processCharge(key, aRequest());
    // Give the first attempt time to claim; the second then waits 150 ms and gives up.
    await new Promise((resolve) => setTimeout(resolve, 100));

    const error = await waiting.processCharge(key, aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(IdempotencyKeyInUseError);
    expect((error as IdempotencyKeyInUseError).retryAfterMs).toBeGreaterThan(0);
    release();
    await expect(first).resolves.toMatchObject({ replayed: false });
  });

  it('many keys at once each charge once', async () => {
    const provider = createFakeProvider({ dedupe: false });
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const keys = Array.from({ length: 40 }, () => aKey());

    await Promise.all(
      keys.flatMap((key) =>
        [0, 1, 2].map(() => engine.processCharge(key, aRequest()).catch(() => null)),
      ),
    );

    const perKey = new Map<string, number>();
    for (const entry of provider.ledger()) {
      perKey.set(entry.providerKey, (perKey.get(entry.providerKey) ?? 0) + 1);
    }
    expect(perKey.size).toBe(40);
    expect([...perKey.values()].every((n) => n === 1)).toBe(true);
  });
});
