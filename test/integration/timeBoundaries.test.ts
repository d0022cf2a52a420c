import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'slonik';
import {
  ChargeNeedsAttentionError,
  createChargeEngine,
  IdempotencyKeyInUseError,
  ProviderAnswerInvalidError,
  ProviderTransientError,
  ProviderUnavailableError,
  type ChargeEngineOptions,
  type CrashPoint,
  type PaymentProvider,
  type SweepResult,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aManualClock } from '../support/manualClock.js';
import {
  aKey,
  aRequest,
  chargeAtProvider,
  expireLease,
  readCharges,
  readKey,
  seedAbandonedKeys,
  seedInterruptedKey,
  sweepingDuringCharge,
} from '../support/charges.js';

// Each hole below was reproduced against the engine before its fix: the comment on each test
// says what used to happen.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** Faults that hold the attempt up once its claim committed, while `meanwhile` runs. */
const stallAfterClaim = (meanwhile: () => Promise<void>) => ({
  shouldCrash: () => false,
  stall: (point: CrashPoint) => (point === 'afterClaimCommit' ? meanwhile() : undefined),
});

const engineWith = (
  options: Partial<ChargeEngineOptions> & Pick<ChargeEngineOptions, 'provider'>,
) => createChargeEngine({ pool: db.pgPool, sweepGraceMs: 0, ...options });

describe('the lease covers the provider call', () => {
  it('a reserve hook slower than the lease: the attempt renews before charging, so a sweeper cannot cancel a charge in flight', async () => {
    // Before: the lease ran out inside the hook; createCharge started anyway; a sweeper found
    // nothing at the provider and stored `cancelled`; then the charge landed. Charged, stored
    // as cancelled.
    // The provider's budget leaves the sweep run inside createCharge time to answer on a busy
    // machine (with 300 ms it once timed out under the whole suite).
    const sweeper = engineWith({
      provider: createFakeProvider(),
      leaseMs: 2_000,
      providerTimeoutMs: 1_200,
    });
    const { provider, swept } = sweepingDuringCharge(() => sweeper.sweep());
    const engine = engineWith({
      provider,
      leaseMs: 2_000,
      providerTimeoutMs: 1_200,
      hooks: { reserve: () => sleep(2_100) },
    });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_slow_hook' });

    const outcome = await engine.processCharge(key, request);

    expect(outcome.status).toBe('succeeded');
    expect(swept()).toMatchObject({ examined: 0, cancelled: 0 });
    expect(provider.ledger()).toHaveLength(1);
    expect(await readKey(db.pool, db.tables, request.merchantId, key)).toMatchObject({
      recovery_point: 'completed',
      response_status: 201,
    });
  });

  it('a claim whose commit is acknowledged past the lease, then taken over: the attempt never calls the provider', async () => {
    // Before: the stalled attempt called createCharge after the sweeper had cancelled the key.
    const clock = aManualClock();
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_stalled_commit' });
    const sweeper = engineWith({ provider: createFakeProvider(), clock });
    let swept: SweepResult | null = null;
    const provider = createFakeProvider();
    const engine = engineWith({
      provider,
      clock,
      faults: stallAfterClaim(async () => {
        // The lease runs out while the acknowledgement is held up; a sweeper takes it.
        await expireLease(db.pool, db.tables, request.merchantId, key);
        clock.advance(30_000);
        swept = await sweeper.sweep();
      }),
    });

    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      IdempotencyKeyInUseError,
    );

    expect(swept).toMatchObject({ examined: 1, cancelled: 1 });
    expect(provider.calls.createCharge).toBe(0);
    expect(provider.ledger()).toHaveLength(0);
    expect((await engine.processCharge(key, request)).status).toBe('cancelled');
  });

  it('a host suspended past the lease after the claim, the key taken meanwhile: on resume the attempt never calls the provider', async () => {
    // Before: performance.now() stops while the host is suspended (a VM paused, a machine
    // asleep) and PostgreSQL's clock does not; the resumed attempt found its lease fresh and
    // called createCharge under a key the sweeper had cancelled. Charged, stored as cancelled.
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_suspended_host' });
    const sweeper = engineWith({ provider: createFakeProvider() });
    let swept: SweepResult | null = null;
    const provider = createFakeProvider();
    // The engine's default clock: the wall clock shows the suspend on resume, as a host's does.
    const realNow = Date.now.bind(Date);
    const engine = engineWith({
      provider,
      faults: stallAfterClaim(async () => {
        // Suspended for longer than the 30 s lease: it ends in the database, a sweeper takes
        // the key and cancels it; the monotonic clock saw none of it.
        await expireLease(db.pool, db.tables, request.merchantId, key);
        swept = await sweeper.sweep();
        vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 31_000);
      }),
    });

    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      IdempotencyKeyInUseError,
    );

    expect(swept).toMatchObject({ examined: 1, cancelled: 1 });
    expect(provider.calls.createCharge).toBe(0);
    expect((await engine.processCharge(key, request)).status).toBe('cancelled');
  });

  it('with a separate claim and a reserve step that outlasts the lease, the attempt renews before charging', async () => {
    // Before: the reserve step committed `reserved` with the lease already over, createCharge
    // went out, and a sweeper could cancel the key under it.
    const clock = aManualClock();
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_separate' });
    const sweeper = engineWith({ provider: createFakeProvider(), clock });
    const { provider, swept } = sweepingDuringCharge(() => sweeper.sweep());
    const engine = engineWith({
      provider,
      clock,
      separateClaim: true,
      hooks: {
        // The reserve step took longer than the 30 s lease, on the clock and in the database.
        reserve: async (tx) => {
          clock.advance(31_000);
          await tx.query(sql.unsafe`
            UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
            WHERE merchant_id = ${request.merchantId} AND key = ${key}`);
        },
      },
    });

    expect((await engine.processCharge(key, request)).status).toBe('succeeded');
    expect(swept()).toMatchObject({ examined: 0, cancelled: 0 });
    expect(provider.ledger()).toHaveLength(1);
  });

  it('the provider budget runs on the monotonic clock: a wall-clock step back does not stretch it', async () => {
    // Before: a 60 s step back during findCharge gave createCharge a minute more; it ran for
    // as long as it liked, past the lease.
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_clock_step' });
    await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');
    const realNow = Date.now.bind(Date);
    let createAborted = false;
    const provider: PaymentProvider = {
      findCharge: async () => {
        vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 60_000);
        await sleep(150);
        return null;
      },
      createCharge: async (input, opts) => {
        opts.signal.addEventListener('abort', () => (createAborted = true));
        await sleep(1_200); // ignores the signal, as a careless adapter would
        return createFakeProvider().createCharge(input, opts);
      },
    };
    const engine = engineWith({ provider, leaseMs: 2_000, providerTimeoutMs: 300 });

    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );
    expect(createAborted).toBe(true);
  });

  it('refuses a provider budget and margin that do not fit in the lease', () => {
    expect(() =>
      engineWith({
        provider: createFakeProvider(),
        leaseMs: 1_000,
        providerTimeoutMs: 800,
        leaseMarginMs: 200,
      }),
    ).toThrow(/leaseMarginMs/);
  });
});

describe('the sweeper asks the provider before it gives up', () => {
  it('adopts a charge that went through, however many attempts the key had', async () => {
    // Before: a key past maxAttempts was parked before any findCharge; its client got
    // ChargeNeedsAttentionError for ever though the customer was charged.
    const provider = createFakeProvider();
    const request = aRequest({ merchantId: 'm_tb_adopt_late' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    await chargeAtProvider(provider, seed!, request);
    await db.pool.query(
      sql.unsafe`UPDATE ${db.tables.keys} SET attempts = 50 WHERE key = ${seed!.key}`,
    );
    const engine = engineWith({ provider, maxAttempts: 5 });

    expect(await engine.sweep()).toMatchObject({ adopted: 1, failed: 0 });
    expect((await engine.processCharge(seed!.key, request)).replayed).toBe(true);
    expect(provider.ledger()).toHaveLength(1);
  });

  it('an outage met by client retries parks nothing at the first sweep: only sweeps count', async () => {
    // Before: a client's default 10 retries during a one-minute outage took the key past
    // maxAttempts, and the first sweep during the outage parked it, charge and all.
    const provider = createFakeProvider();
    const healthyFind = provider.findCharge.bind(provider);
    provider.findCharge = () => Promise.reject(new ProviderTransientError('http_503'));
    const request = aRequest({ merchantId: 'm_tb_outage_retries' });
    const [charged, down] = await seedAbandonedKeys(db.pool, db.tables, 2, request);
    await chargeAtProvider(provider, charged!, request);
    // Eleven attempts each: the first, and ten retries of a client during the outage.
    await db.pool.query(
      sql.unsafe`UPDATE ${db.tables.keys} SET attempts = 11 WHERE merchant_id = ${request.merchantId}`,
    );
    const engine = engineWith({ provider, maxAttempts: 3 });

    expect(await engine.sweep()).toMatchObject({ examined: 2, skipped: 2, failed: 0 });
    expect(await engine.sweep()).toMatchObject({ examined: 2, skipped: 2, failed: 0 });
    // The provider is back for the charged key's third sweep; the other's stays down: parked.
    provider.findCharge = (providerKey, options) =>
      providerKey === charged!.providerKey
        ? healthyFind(providerKey, options)
        : Promise.reject(new ProviderTransientError('http_503'));
    expect(await engine.sweep()).toMatchObject({ examined: 2, adopted: 1, failed: 1 });
    expect((await engine.processCharge(charged!.key, request)).replayed).toBe(true);
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === down!.key);
    expect(stuck?.reason).toMatch(/could not answer after 3 sweeps \(14 attempts in all\)/);

    // A requeued key is given maxAttempts sweeps again.
    await engine.requeue({
      merchantId: request.merchantId,
      key: down!.key,
      actor: 'ops',
      reason: 'r',
    });
    expect(await engine.sweep()).toMatchObject({ examined: 1, skipped: 1, failed: 0 });
  });

  it('releases a key at started whatever its attempts; never parks it', async () => {
    const request = aRequest({ merchantId: 'm_tb_started' });
    const key = aKey();
    await seedInterruptedKey(db.pool, db.tables, key, request, 'started');
    await db.pool.query(sql.unsafe`UPDATE ${db.tables.keys} SET attempts = 50 WHERE key = ${key}`);
    const engine = engineWith({ provider: createFakeProvider(), maxAttempts: 2 });

    expect(await engine.sweep()).toMatchObject({ released: 1, failed: 0 });
    expect(await readKey(db.pool, db.tables, request.merchantId, key)).toBeNull();
  });

  it('parks only while the provider cannot answer; requeue brings the key back and the sweeper adopts', async () => {
    const provider = createFakeProvider();
    const healthyFind = provider.findCharge.bind(provider);
    provider.findCharge = () => Promise.reject(new ProviderTransientError('http_503'));
    const request = aRequest({ merchantId: 'm_tb_requeue' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    const engine = engineWith({ provider, maxAttempts: 1 });
    // The charge went through; the answer was lost and the provider is down since.
    await chargeAtProvider(provider, seed!, request);

    expect(await engine.sweep()).toMatchObject({ failed: 1 });
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === seed!.key);
    expect(stuck?.reason).toMatch(/provider could not answer.*http_503/);
    await expect(engine.processCharge(seed!.key, request)).rejects.toBeInstanceOf(
      ChargeNeedsAttentionError,
    );

    provider.findCharge = healthyFind;
    const target = { merchantId: request.merchantId, key: seed!.key, actor: 'ops', reason: 'back' };
    expect(await engine.requeue(target)).toBe(true);
    expect(await engine.requeue(target)).toBe(false);
    expect(await engine.sweep()).toMatchObject({ adopted: 1 });
    expect((await engine.processCharge(seed!.key, request)).status).toBe('succeeded');
    expect(provider.ledger()).toHaveLength(1);
  });
});

describe('provider answers are checked', () => {
  const wrongAmount = (fake = createFakeProvider()): PaymentProvider => ({
    findCharge: (k, o) => fake.findCharge(k, o),
    createCharge: async (input, opts) => ({
      ...(await fake.createCharge(input, opts)),
      amountMinor: 1,
    }),
  });

  it('a created charge for another amount parks the key with the reason and never completes it', async () => {
    // Before: stored `succeeded` with a body saying the requested amount.
    const engine = engineWith({ provider: wrongAmount() });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_amount', amountMinor: 2000, currency: 'NGN' });

    const error = await engine.processCharge(key, request).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderAnswerInvalidError);
    expect(error).toMatchObject({ code: 'provider_answer_invalid' });
    expect(await readKey(db.pool, db.tables, request.merchantId, key)).toMatchObject({
      recovery_point: 'failed',
      response_body: null,
    });
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === key);
    expect(stuck?.reason).toMatch(/1 NGN.*2000 NGN/);
    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      ChargeNeedsAttentionError,
    );
    expect((await readCharges(db.pool, db.tables, request.merchantId))[0]?.status).toBe('reserved');
  });

  it.each([
    { name: 'without hooks', hooks: {} },
    { name: 'with a complete hook', hooks: { complete: () => Promise.resolve() } },
  ])(
    'a charge id the provider already gave another key is refused, not a raw database error ($name)',
    async ({ name, hooks }) => {
      const fake = createFakeProvider();
      const provider: PaymentProvider = {
        findCharge: (k, o) => fake.findCharge(k, o),
        createCharge: async (input, opts) => ({
          ...(await fake.createCharge(input, opts)),
          id: 'pch_always_the_same',
        }),
      };
      const engine = engineWith({ provider, hooks });
      const merchantId = `m_tb_same_charge_id_${name.length}`;
      await engine.processCharge(aKey(), aRequest({ merchantId }));
      const key = aKey();

      await expect(engine.processCharge(key, aRequest({ merchantId }))).rejects.toBeInstanceOf(
        ProviderAnswerInvalidError,
      );
      const [stuck] = (await engine.listStuck()).filter((s) => s.key === key);
      expect(stuck?.reason).toMatch(/already recorded for another charge/);
    },
  );

  it('a malformed answer parks the key with a readable reason', async () => {
    // Before: the key stayed `reserved` with an empty last_error and a message about slonik.
    const provider: PaymentProvider = {
      findCharge: () => Promise.resolve(null),
      createCharge: () => Promise.resolve({ id: 'ch_1', status: 'ok' } as never),
    };
    const engine = engineWith({ provider });
    const key = aKey();
    const request = aRequest({ merchantId: 'm_tb_malformed' });

    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      ProviderAnswerInvalidError,
    );
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === key);
    expect(stuck?.reason).toMatch(/malformed provider charge.*status/);
  });

  it('an adopted charge for another currency is refused too, by a retry and by the sweeper', async () => {
    const request = aRequest({ merchantId: 'm_tb_adopt_wrong', currency: 'NGN' });
    const [seed] = await seedAbandonedKeys(db.pool, db.tables, 1, request);
    const provider: PaymentProvider = {
      findCharge: () =>
        Promise.resolve({
          id: 'ch_x',
          status: 'succeeded',
          amountMinor: request.amountMinor,
          currency: 'USD',
        }),
      createCharge: () => Promise.reject(new Error('must not charge: the lookup answered')),
    };
    const engine = engineWith({ provider });

    expect(await engine.sweep()).toMatchObject({ failed: 1 });
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === seed!.key);
    expect(stuck?.reason).toContain('USD');
  });
});

describe("the provider's idempotency window", () => {
  const HOUR = 3_600_000;
  /** A key interrupted at `reserved`, its intent written `ageMs` ago. */
  const seedAged = async (merchantId: string, ageMs: number) => {
    const key = aKey();
    const request = aRequest({ merchantId });
    await seedInterruptedKey(db.pool, db.tables, key, request, 'reserved');
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.charges} SET created_at = now() - ${ageMs}::float8 * interval '1 millisecond'
      WHERE merchant_id = ${merchantId}`);
    return { key, request };
  };
  /** A provider whose lookup lags (finds nothing) and says so. */
  const laggingLookup = (seen: Date[] = []) => {
    const fake = createFakeProvider();
    const provider: PaymentProvider = {
      idempotencyWindowMs: HOUR,
      lookupIsAuthoritative: false,
      findCharge: (_key, opts) => {
        seen.push(opts.reservedAt);
        return Promise.resolve(null);
      },
      createCharge: (input, opts) => fake.createCharge(input, opts),
    };
    return { provider, fake };
  };

  it('past the window, a lookup that cannot be trusted parks the key instead of charging', async () => {
    const seen: Date[] = [];
    const { provider, fake } = laggingLookup(seen);
    const { key, request } = await seedAged('m_tb_window_past', 2 * HOUR);
    const engine = engineWith({ provider });

    await expect(engine.processCharge(key, request)).rejects.toBeInstanceOf(
      ChargeNeedsAttentionError,
    );

    expect(fake.calls.createCharge).toBe(0);
    const [stuck] = (await engine.listStuck()).filter((s) => s.key === key);
    expect(stuck?.reason).toMatch(/past the provider's idempotency window/);
    // The lookup was told when the intent was written, by the database's clock.
    expect(Math.abs(Date.now() - 2 * HOUR - seen[0]!.getTime())).toBeLessThan(60_000);
  });

  it('the sweeper parks it too rather than cancel on that answer', async () => {
    const { provider, fake } = laggingLookup();
    const { key } = await seedAged('m_tb_window_sweep', 2 * HOUR);
    const engine = engineWith({ provider });

    expect((await engine.sweep()).failed).toBeGreaterThanOrEqual(1);

    expect(fake.calls.createCharge).toBe(0);
    expect(await readKey(db.pool, db.tables, 'm_tb_window_sweep', key)).toMatchObject({
      recovery_point: 'failed',
    });
  });

  it('within the window the same lookup is harmless: the charge goes out under the same key', async () => {
    const { provider, fake } = laggingLookup();
    const { key, request } = await seedAged('m_tb_window_within', 10 * 60_000);

    expect((await engineWith({ provider }).processCharge(key, request)).status).toBe('succeeded');
    expect(fake.ledger()).toHaveLength(1);
  });

  it('an authoritative lookup may be acted on past the window', async () => {
    const { provider, fake } = laggingLookup();
    const { key, request } = await seedAged('m_tb_window_authoritative', 2 * HOUR);
    const authoritative: PaymentProvider = { ...provider, lookupIsAuthoritative: true };

    expect((await engineWith({ provider: authoritative }).processCharge(key, request)).status).toBe(
      'succeeded',
    );
    expect(fake.ledger()).toHaveLength(1);
  });

  it("a provider's Retry-After becomes the caller's retryAfterMs", async () => {
    const provider: PaymentProvider = {
      findCharge: () => Promise.resolve(null),
      createCharge: () =>
        Promise.reject(new ProviderTransientError('http_429', { retryAfterMs: 7_000 })),
    };
    const error = await engineWith({ provider })
      .processCharge(aKey(), aRequest({ merchantId: 'm_tb_retry_after' }))
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ProviderUnavailableError);
    expect((error as ProviderUnavailableError).retryAfterMs).toBe(7_000);
  });
});
