import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChargeEngine, IdempotencyKeyInUseError } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aGate, aKey, aRequest, expireLease, readKey, waitFor } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('fencing', () => {
  it('a zombie attempt whose lease was taken over cannot overwrite the outcome', async () => {
    const gate = aGate();
    let calls = 0;
    // The first createCharge (the zombie's) stalls until the test opens the gate.
    const provider = createFakeProvider({
      beforeAnswer: (method) =>
        method === 'createCharge' && calls++ === 0 ? gate.wait() : Promise.resolve(),
    });
    const completedBy: string[] = [];
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider,
      hooks: {
        complete: (_tx, ctx) => {
          completedBy.push(ctx.chargeId);
          return Promise.resolve();
        },
      },
    });
    const key = aKey();

    const zombie = engine.processCharge(key, aRequest()).catch((e: unknown) => e);
    await waitFor(() => Promise.resolve(calls === 1));
    await expireLease(db.pool, db.tables, 'm_1', key);

    const taker = await engine.processCharge(key, aRequest());
    expect(taker.replayed).toBe(false);
    const stored = await readKey(db.pool, db.tables, 'm_1', key);

    gate.open();
    const zombieResult = await zombie;

    expect(zombieResult).toBeInstanceOf(IdempotencyKeyInUseError);
    expect(await readKey(db.pool, db.tables, 'm_1', key)).toEqual(stored);
    expect(stored?.response_body).toBe(taker.body);
    expect(provider.ledger()).toHaveLength(1);
    // Only the attempt that held the lease ran its complete hook.
    expect(completedBy).toEqual([taker.chargeId]);
    const replay = await engine.processCharge(key, aRequest());
    expect(replay.body).toBe(taker.body);
  });
});
