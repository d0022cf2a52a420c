import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import {
  createChargeEngine,
  createFakeProvider,
  CRASH_POINTS,
  IdempotencyKeyInUseError,
  ProviderUnavailableError,
  reconcile,
  SimulatedCrashError,
  type CrashPoint,
  type FakeFault,
  type FakeProvider,
  type ObservedResponse,
} from '../../src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aRequest } from '../support/charges.js';

// Arbitrary schedules of concurrent attempts on a few keys, each attempt with a crash point or
// none and a provider fault or none, interleaved with lease expiry, sweeps and the provider
// forgetting its idempotency keys. Whatever happens, the reconciler must find nothing.

const RUNS = Number(process.env.CHARGEONCE_PROPERTY_RUNS ?? 200);

type Attempt = {
  key: number;
  crash: CrashPoint | null;
  fault: FakeFault | null;
  separateClaim: boolean;
};
type Step =
  | { do: 'attempts'; attempts: Attempt[]; withSweep: boolean }
  | { do: 'expireLeases' }
  | { do: 'sweep'; onAbandoned: 'cancel' | 'complete' }
  | { do: 'forgetIdempotencyKeys' };
type Schedule = { keys: number; providerDedupes: boolean; steps: Step[] };

const attemptArb = (keys: number): fc.Arbitrary<Attempt> =>
  fc.record({
    key: fc.integer({ min: 0, max: keys - 1 }),
    crash: fc.option(fc.constantFrom(...CRASH_POINTS), { freq: 2 }),
    fault: fc.option(
      fc.constantFrom<FakeFault>('failBeforeCharge', 'failAfterCharge', 'decline', 'hang'),
      { freq: 3 },
    ),
    separateClaim: fc.boolean(),
  });

const stepArb = (keys: number): fc.Arbitrary<Step> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        do: fc.constant('attempts' as const),
        attempts: fc.array(attemptArb(keys), { minLength: 1, maxLength: 4 }),
        withSweep: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ do: fc.constant('expireLeases' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        do: fc.constant('sweep' as const),
        onAbandoned: fc.constantFrom('cancel' as const, 'complete' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ do: fc.constant('forgetIdempotencyKeys' as const) }) },
  );

const scheduleArb: fc.Arbitrary<Schedule> = fc.integer({ min: 1, max: 3 }).chain((keys) =>
  fc.record({
    keys: fc.constant(keys),
    providerDedupes: fc.boolean(),
    steps: fc.array(stepArb(keys), { minLength: 1, maxLength: 6 }),
  }),
);

let db: TestDatabase;
let run = 0;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 10 });
});
afterAll(async () => {
  await db.drop();
});

/** Errors an attempt may end with under these faults; anything else is a bug. */
function isExpected(error: unknown): boolean {
  return (
    error instanceof SimulatedCrashError ||
    error instanceof IdempotencyKeyInUseError ||
    error instanceof ProviderUnavailableError
  );
}

async function execute(schedule: Schedule): Promise<void> {
  run += 1;
  const merchantId = `m_prop_${run}`;
  const keys = Array.from({ length: schedule.keys }, (_, i) => `run-${run}-key-${i}`);
  const request = aRequest({ merchantId });
  const provider: FakeProvider = createFakeProvider({ dedupe: schedule.providerDedupes });
  const observations: ObservedResponse[] = [];
  const unexpected: unknown[] = [];
  const engineFor = (attempt?: Attempt, onAbandoned: 'cancel' | 'complete' = 'cancel') =>
    createChargeEngine({
      pool: db.pool,
      provider,
      providerTimeoutMs: 50,
      sweepGraceMs: 0,
      onAbandoned,
      separateClaim: attempt?.separateClaim ?? false,
      ...(attempt?.crash
        ? { faults: { shouldCrash: (p: CrashPoint) => p === attempt.crash } }
        : {}),
    });
  const charge = async (attempt: Attempt) => {
    try {
      const outcome = await engineFor(attempt).processCharge(keys[attempt.key]!, request);
      observations.push({ merchantId, key: keys[attempt.key]!, body: outcome.body });
    } catch (error) {
      if (!isExpected(error)) unexpected.push(error);
    }
  };
  const expireLeases = () =>
    db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
      WHERE merchant_id = ${merchantId} AND lock_token IS NOT NULL`);

  for (const step of schedule.steps) {
    switch (step.do) {
      case 'attempts':
        for (const attempt of step.attempts) if (attempt.fault) provider.failNext(attempt.fault);
        await Promise.all([
          ...step.attempts.map(charge),
          ...(step.withSweep ? [engineFor().sweep()] : []),
        ]);
        break;
      case 'expireLeases':
        await expireLeases();
        break;
      case 'sweep':
        await engineFor(undefined, step.onAbandoned).sweep();
        break;
      case 'forgetIdempotencyKeys':
        provider.forgetIdempotencyKeys();
        break;
    }
  }

  // Every client comes back once more, after every lease has run out; then a sweep.
  provider.clearFaults();
  await expireLeases();
  for (const key of keys)
    await charge({ key: keys.indexOf(key), crash: null, fault: null, separateClaim: false });
  await expireLeases();
  await engineFor().sweep();

  const report = await reconcile({
    pool: db.pool,
    providerLedger: provider.ledger(),
    merchantIds: [merchantId],
    ledgerIsOnlyTheirs: true,
    expectFinished: true,
    observations,
  });
  if (unexpected.length > 0 || report.violations.length > 0) {
    throw new Error(
      `schedule broke exactly-once:\n${JSON.stringify({ unexpected: unexpected.map(String), violations: report.violations }, null, 2)}`,
    );
  }
}

describe('arbitrary schedules of attempts, crashes, faults, lease expiry and sweeps', () => {
  it(`leave exactly one provider charge per key and nothing lost (${RUNS} schedules)`, async () => {
    await fc.assert(fc.asyncProperty(scheduleArb, execute), { numRuns: RUNS });
    expect(run).toBeGreaterThanOrEqual(RUNS);
  }, 240_000);
});
