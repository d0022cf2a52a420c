import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { startRecovery } from '../../src/recovery/startRecovery.js';
import { emptySweepResult } from '../../src/recovery/sweep.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aRequest, seedAbandonedKeys, waitFor } from '../support/charges.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const emptySweep = emptySweepResult();

describe('startRecovery', () => {
  it('finishes abandoned keys in the background and stops on the signal', async () => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      sweepGraceMs: 0,
    });
    await seedAbandonedKeys(db.pool, db.tables, 30, aRequest({ merchantId: 'm_loop' }));
    const controller = new AbortController();
    const errors: unknown[] = [];

    const loop = engine.startRecovery({
      intervalMs: 20,
      signal: controller.signal,
      onError: (e) => errors.push(e),
      sweep: { limit: 10 },
    });
    await waitFor(async () => (await engine.status()).abandoned === 0, 20_000);
    controller.abort();
    await loop;

    expect(errors).toEqual([]);
    const unfinished = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM ${db.tables.keys}
      WHERE merchant_id = 'm_loop' AND recovery_point <> 'completed'`);
    expect(unfinished).toBe(0);
  });

  it('reports errors through onError and keeps going', async () => {
    const controller = new AbortController();
    const errors: unknown[] = [];
    let passes = 0;
    const loop = startRecovery(
      {
        sweep: () => {
          passes += 1;
          if (passes === 1) return Promise.reject(new Error('database restarting'));
          if (passes >= 3) controller.abort();
          return Promise.resolve(emptySweep);
        },
        reap: () => Promise.resolve(0),
      },
      {
        intervalMs: 1,
        signal: controller.signal,
        onError: (e) => {
          errors.push(e);
          throw new Error('a handler that throws must not stop the loop');
        },
      },
    );

    await loop;

    expect(passes).toBe(3);
    expect(errors).toHaveLength(1);
    expect((errors[0] as Error).message).toBe('database restarting');
  });

  it('runs again at once after a full batch, and waits after an empty one', async () => {
    const controller = new AbortController();
    const pauses: number[] = [];
    let passes = 0;
    await startRecovery(
      {
        sweep: () => {
          passes += 1;
          if (passes === 4) controller.abort();
          return Promise.resolve({
            ...emptySweep,
            examined: passes <= 2 ? 5 : 0,
            adopted: passes <= 2 ? 5 : 0,
          });
        },
        reap: () => Promise.resolve(0),
      },
      { intervalMs: 1, signal: controller.signal, sweep: { limit: 5 } },
      () => {
        pauses.push(passes);
        return 0.5;
      },
    );
    // Passes 1 and 2 were full: no pause after them. Pass 3 was empty: one pause.
    expect(pauses).toEqual([3]);
  });
});
