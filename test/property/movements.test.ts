import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ChargeNeedsAttentionError,
  createChargeEngine,
  CRASH_POINTS,
  IdempotencyKeyInUseError,
  ProviderAnswerInvalidError,
  ProviderUnavailableError,
  SimulatedCrashError,
  type CaptureRequest,
  type ChargeOnceEvent,
  type ChargeRequest,
  type CrashPoint,
  type FaultInjector,
  type RefundRequest,
} from '../../src/index.js';
import { createFakeProvider, type FakeProvider } from '../../src/testing/index.js';
import { aKey, aRequest, readKey } from '../support/charges.js';
import {
  checkMoneyBooks,
  keyId,
  type MoneyViolation,
  type ProviderBooks,
  type SeenResponse,
} from '../support/checkMoneyBooks.js';
import { expectedRefusal } from '../support/expectedRefusal.js';
import {
  readMovementOfKey,
  readStoredCharge,
  readStoreBooks,
  type StoreBooks,
} from '../support/readStoreBooks.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

// Random schedules that mix charges, captures and refunds of one to three charges. Every attempt
// (the charges' own included) may crash at any crash point or meet a provider that fails before
// or after moving money, declines or refuses, hangs, answers wrongly or is out; keys are sent
// again, some attempts run side by side, and leases end and sweeps run in between. Refunds and
// captures target a charge by index, whatever state it is in: not claimed yet, claimed but not
// charged, declined, cancelled, parked, or succeeded. A new refund or capture that runs alone is
// judged on the spot: refused exactly when its charge, as it stood, says it must be. Once
// everything is settled (a sweep or the clients first, then every key asked again, then a
// sweep), the store is checked against the fake provider's books (see `checkMoneyBooks`). The
// provider does not dedupe: an engine that asked it twice under one key shows in its books.
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const RUNS = Number(process.env.CHARGEONCE_PROPERTY_RUNS ?? 250);
/** Short, so that a provider that hangs costs a schedule little; far above the fake's latency. */
const PROVIDER_TIMEOUT_MS = 100;

/**
 * What the provider does to one attempt's money-moving call (`refuse`: a charge declined, a
 * refund or capture answered `failed`; `wrongAmount` and `malformed` get the key parked;
 * `outage`: the next two calls of any kind fail, lookups included).
 */
type ProviderFault =
  'before' | 'after' | 'refuse' | 'hang' | 'wrongAmount' | 'malformed' | 'outage';
type Attempt = { crash: CrashPoint | null; fault: ProviderFault | null; separateClaim: boolean };
/** What happens once an op (and those running beside it) returned. */
type Then = 'nothing' | 'expireLeases' | 'sweep';
/** When an op runs, and what runs beside it. */
type Timing = {
  /** Runs side by side with the op before it. */
  together: boolean;
  /** A sweep runs beside it (it takes only keys whose lease already ended). */
  sweepBeside: boolean;
  then: Then;
};
type ChargeOp = Timing & { kind: 'charge'; charge: number; attempt: Attempt };
type MovementOp = Timing & {
  kind: 'refund' | 'capture';
  /** Index of the charge moved on (modulo the schedule's charges). */
  charge: number;
  /** Index of an earlier refund or capture to send again (same key, same request), or null. */
  again: number | null;
  /** Null: a refund of the whole charge, a capture of all that was authorized. */
  amountMinor: number | null;
  attempt: Attempt;
};
type Op = ChargeOp | MovementOp;
type ChargeSpec = {
  amountMinor: number;
  authorizeOnly: boolean;
  /** Its first attempt, at the start of the schedule; null: first sent by a later op, or last. */
  first: ChargeOp | null;
};
type Schedule = {
  charges: ChargeSpec[];
  /** What the sweeper does with a key the provider has nothing under. */
  onAbandoned: 'cancel' | 'complete';
  /** Who comes first once the faults are over: the sweeper, or the clients asking again. */
  settleBy: 'sweeper' | 'clients';
  ops: Op[];
};

const faultArb: fc.Arbitrary<ProviderFault | null> = fc.oneof(
  { weight: 5, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constant('before' as const) },
  { weight: 2, arbitrary: fc.constant('after' as const) },
  { weight: 2, arbitrary: fc.constant('refuse' as const) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'hang' as const,
      'wrongAmount' as const,
      'malformed' as const,
      'outage' as const,
    ),
  },
);

/** An attempt that crashes with odds of `crashes` in ten, and meets a fault or not. */
const attemptArb = (crashes: number, fault: fc.Arbitrary<ProviderFault | null>) =>
  fc.record({
    crash: fc.oneof(
      { weight: 10 - crashes, arbitrary: fc.constant(null) },
      { weight: crashes, arbitrary: fc.constantFrom(...CRASH_POINTS) },
    ),
    fault,
    separateClaim: fc.boolean(),
  });

const thenArb: fc.Arbitrary<Then> = fc.oneof(
  { weight: 3, arbitrary: fc.constant('nothing' as const) },
  { weight: 2, arbitrary: fc.constant('expireLeases' as const) },
  { weight: 1, arbitrary: fc.constant('sweep' as const) },
);

/** True with odds of one in `n`. */
const oneIn = (n: number) =>
  fc.oneof(
    { weight: n - 1, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  );

const chargeOpArb = (attempt: fc.Arbitrary<Attempt>): fc.Arbitrary<ChargeOp> =>
  fc.record({
    kind: fc.constant('charge' as const),
    charge: fc.nat({ max: 2 }),
    attempt,
    together: oneIn(4),
    sweepBeside: oneIn(6),
    then: thenArb,
  });

const movementOpArb: fc.Arbitrary<MovementOp> = fc.record({
  kind: fc.constantFrom('refund' as const, 'capture' as const),
  charge: fc.nat({ max: 2 }),
  again: fc.oneof(
    { weight: 2, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.nat({ max: 15 }) },
  ),
  amountMinor: fc.option(fc.integer({ min: 1, max: 400 }), { freq: 4 }),
  attempt: attemptArb(3, faultArb),
  together: oneIn(4),
  sweepBeside: oneIn(6),
  then: thenArb,
});

const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  charges: fc.array(
    fc.record({
      amountMinor: fc.integer({ min: 100, max: 1_000 }),
      authorizeOnly: fc.boolean(),
      // Most charges are made early, mostly without trouble, so that their refunds and
      // captures have money to move; the rest are made by later ops, or only at the end.
      first: fc.option(
        chargeOpArb(
          attemptArb(
            2,
            fc.oneof(
              { weight: 2, arbitrary: fc.constant(null) },
              { weight: 1, arbitrary: faultArb },
            ),
          ),
        ),
        { freq: 6 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  onAbandoned: fc.constantFrom('cancel' as const, 'complete' as const),
  settleBy: fc.constantFrom('sweeper' as const, 'clients' as const),
  ops: fc.array(
    fc.oneof(
      { weight: 1, arbitrary: chargeOpArb(attemptArb(3, faultArb)) },
      { weight: 4, arbitrary: movementOpArb },
    ),
    { minLength: 1, maxLength: 20 },
  ),
});

/** Errors an attempt may end with under these faults; anything else is a bug. */
function isExpected(error: unknown): boolean {
  return (
    error instanceof SimulatedCrashError ||
    error instanceof ProviderUnavailableError ||
    // Its key is held: by an attempt beside it, or by one that crashed and whose lease still runs.
    error instanceof IdempotencyKeyInUseError
  );
}

type Call =
  | { operation: 'charge'; key: string; index: number; request: ChargeRequest }
  | { operation: 'refund'; key: string; request: RefundRequest }
  | { operation: 'capture'; key: string; request: CaptureRequest };

/** What one schedule left: both sides of the books, what clients saw, what went wrong. */
type Settled = {
  provider: ProviderBooks;
  store: StoreBooks;
  seen: SeenResponse[];
  toldParked: Set<string>;
  unexpected: string[];
  /** Refunds and captures refused when they should not have been, or let through wrongly. */
  misjudged: string[];
};

/** What the schedules went through, over every run: each should be reached by some schedule. */
const reached = new Map<string, number>();
const reach = (what: string) => reached.set(what, (reached.get(what) ?? 0) + 1);

let run = 0;

async function execute(schedule: Schedule): Promise<Settled> {
  run += 1;
  const merchantId = `m_prop_mix_${run}`;
  const fake = createFakeProvider({ dedupe: false });
  // Each attempt's crash point, by key, firing once.
  const crashes = new Map<string, CrashPoint>();
  const faults: FaultInjector = {
    shouldCrash: (point, ctx) => {
      if (crashes.get(ctx.key) !== point) return false;
      crashes.delete(ctx.key);
      reach(`crash:${ctx.operation}`);
      return true;
    },
  };
  const onEvent = (event: ChargeOnceEvent) => {
    if (event.type === 'adopted') {
      reach(`adopted:${event.operation}`);
      if (event.operation !== 'charge') reach(`adopted:movement:${event.by}`);
    }
    if (event.type === 'cancelled' || event.type === 'parked') {
      reach(`${event.type}:${event.operation}`);
    }
  };
  const engineOf = (separateClaim: boolean) =>
    createChargeEngine({
      pool: db.pgPool,
      provider: fake,
      providerTimeoutMs: PROVIDER_TIMEOUT_MS,
      separateClaim,
      faults,
      onEvent,
    });
  const engines = { joint: engineOf(false), separate: engineOf(true) };
  const recovery = createChargeEngine({
    pool: db.pgPool,
    provider: fake,
    providerTimeoutMs: PROVIDER_TIMEOUT_MS,
    sweepGraceMs: 0,
    onAbandoned: schedule.onAbandoned,
    // A sweep beside attempts may meet their faults; it never parks a key for the provider's
    // silence here (the schedules test covers that): every key parked is one it answered wrongly.
    maxAttempts: Number.MAX_SAFE_INTEGER,
    onEvent,
  });

  const seen: SeenResponse[] = [];
  const toldParked = new Set<string>();
  const unexpected: string[] = [];
  const misjudged: string[] = [];
  const chargeCalls = schedule.charges.map((spec, index): Call => ({
    operation: 'charge',
    key: aKey(),
    index,
    request: aRequest({ merchantId, amountMinor: spec.amountMinor, capture: !spec.authorizeOnly }),
  }));
  /** chargeonce's ids of the charges, once an attempt answered. */
  const chargeIds: Array<string | undefined> = [];
  /** The id a refund or capture names for a charge never claimed: no such charge. */
  const unknownIds = schedule.charges.map(() => randomUUID());
  const sent: Call[] = [];

  /** The charge a new refund or capture names: as its client knows it, or as the store does. */
  const targetOf = async (index: number): Promise<string> => {
    const known = chargeIds[index];
    if (known !== undefined) return known;
    const key = await readKey(db.pool, db.tables, merchantId, chargeCalls[index]!.key);
    return key?.charge_id ?? unknownIds[index]!;
  };
  /** The call an op makes; `fresh` for a refund or capture under a new key. */
  const callOf = async (op: Op): Promise<{ call: Call; fresh: boolean }> => {
    const index = op.charge % schedule.charges.length;
    if (op.kind === 'charge') return { call: chargeCalls[index]!, fresh: false };
    if (op.again !== null && sent.length > 0) {
      return { call: sent[op.again % sent.length]!, fresh: false };
    }
    const chargeId = await targetOf(index);
    const call: Call =
      op.kind === 'refund'
        ? {
            operation: 'refund',
            key: aKey(),
            request: {
              merchantId,
              chargeId,
              amountMinor: op.amountMinor ?? schedule.charges[index]!.amountMinor,
            },
          }
        : {
            operation: 'capture',
            key: aKey(),
            request: {
              merchantId,
              chargeId,
              ...(op.amountMinor === null ? {} : { amountMinor: op.amountMinor }),
            },
          };
    sent.push(call);
    return { call, fresh: true };
  };
  /**
   * Sends a new refund or capture that runs alone, and checks that it was refused exactly when
   * its charge, as it stood just before, said it must be, and for that reason.
   */
  const sendJudged = async (call: Call & { operation: 'refund' | 'capture' }, attempt: Attempt) => {
    const before = await readStoredCharge(db.pool, db.tables, merchantId, call.request.chargeId);
    await send(call, attempt, false);
    const movement = await readMovementOfKey(
      db.pool,
      db.tables,
      merchantId,
      call.operation,
      call.key,
    );
    if (!movement) return;
    const expected = expectedRefusal(before, {
      kind: call.operation,
      amountMinor: call.request.amountMinor ?? null,
    });
    const refusal = movement.status === 'refused' ? movement.refusal : null;
    reach(`judged:${expected ?? 'let through'}`);
    if (refusal !== expected) {
      misjudged.push(
        `${call.operation} ${call.key} of ${call.request.amountMinor ?? 'all'} on ${JSON.stringify(before)}: ${refusal ?? 'let through'}, expected ${expected ?? 'let through'}`,
      );
    }
  };
  const send = async (call: Call, attempt: Attempt | null, settling: boolean) => {
    const engine = attempt?.separateClaim ? engines.separate : engines.joint;
    if (attempt?.crash) crashes.set(call.key, attempt.crash);
    try {
      const outcome =
        call.operation === 'charge'
          ? await engine.processCharge(call.key, call.request)
          : call.operation === 'refund'
            ? await engine.processRefund(call.key, call.request)
            : await engine.processCapture(call.key, call.request);
      seen.push({ operation: call.operation, key: call.key, body: outcome.body });
      if (call.operation === 'charge') chargeIds[call.index] = outcome.chargeId;
    } catch (error) {
      if (
        error instanceof ChargeNeedsAttentionError ||
        error instanceof ProviderAnswerInvalidError
      ) {
        toldParked.add(keyId(call.operation, call.key));
      } else if (settling || !isExpected(error)) {
        unexpected.push(`${call.operation} ${call.key}: ${String(error)}`);
      }
    }
  };
  const endLeases = () =>
    db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET locked_until = now() - interval '1 millisecond'
      WHERE merchant_id = ${merchantId} AND recovery_point IN ('started', 'reserved')`);
  const sweep = async () => {
    const result = await recovery.sweep();
    if (result.errored > 0) unexpected.push(`a sweep errored on ${result.errored} keys`);
  };

  const ops: Op[] = [
    ...schedule.charges.flatMap((spec, index) =>
      spec.first ? [{ ...spec.first, charge: index, together: false }] : [],
    ),
    ...schedule.ops,
  ];
  try {
    for (const group of inGroups(ops)) {
      const calls: Array<{ call: Call; fresh: boolean }> = [];
      for (const op of group) calls.push(await callOf(op));
      group.forEach((op, i) => queueFault(fake, calls[i]!.call.operation, op.attempt.fault));
      const sweepBeside = group.some((op) => op.sweepBeside);
      if (group.length > 1) reach('side by side');
      if (sweepBeside) reach('sweep beside');
      const alone = calls.length === 1 && !sweepBeside ? calls[0]! : undefined;
      if (alone?.fresh && alone.call.operation !== 'charge') {
        await sendJudged(alone.call, group[0]!.attempt);
      } else {
        await Promise.all([
          ...calls.map(({ call }, i) => send(call, group[i]!.attempt, false)),
          ...(sweepBeside ? [sweep()] : []),
        ]);
      }
      crashes.clear();
      fake.clearFaults();
      // Leases end only here, with no attempt in flight: none loses a lease it still measures
      // as its own (zombie attempts are the schedules test's subject).
      const then = strongest(group.map((op) => op.then));
      if (then !== 'nothing') await endLeases();
      if (then === 'sweep') await sweep();
    }

    // Settle: the provider is healthy and leases end; a sweep finishes what it can, or the
    // clients come back first. Every key is asked again, charges first (a charge made only now
    // leaves the refunds and captures sent before it refused, as stored), then a last sweep.
    await endLeases();
    if (schedule.settleBy === 'sweeper') await sweep();
    for (const call of chargeCalls) await send(call, null, true);
    for (const call of sent) await send(call, null, true);
    await endLeases();
    await sweep();
  } finally {
    await engines.joint.close();
    await engines.separate.close();
    await recovery.close();
  }

  const store = await readStoreBooks(db.pool, db.tables, merchantId);
  for (const m of store.movements) reach(`${m.kind}:${m.refusal ?? m.status}`);
  for (const c of store.charges) reach(`charge:${c.status}`);
  return {
    provider: {
      charges: [...fake.ledger()],
      refunds: fake.refundLedger(),
      captures: fake.captureLedger(),
    },
    store,
    seen,
    toldParked,
    unexpected,
    misjudged,
  };
}

/** Ops in runs that go side by side: an op marked `together` joins the group before it. */
function inGroups(ops: readonly Op[]): Op[][] {
  const groups: Op[][] = [];
  for (const op of ops) {
    const last = groups.at(-1);
    if (op.together && last) last.push(op);
    else groups.push([op]);
  }
  return groups;
}

function strongest(thens: readonly Then[]): Then {
  if (thens.includes('sweep')) return 'sweep';
  return thens.includes('expireLeases') ? 'expireLeases' : 'nothing';
}

/** The fake's names of the faults named apart for each operation. */
const FAKE_FAULTS = {
  charge: { before: 'failBeforeCharge', after: 'failAfterCharge', refuse: 'decline' },
  refund: { before: 'failBeforeRefund', after: 'failAfterRefund', refuse: 'failRefund' },
  capture: { before: 'failBeforeCapture', after: 'failAfterCapture', refuse: 'failCapture' },
} as const;

/** Queues one attempt's provider fault on the call it will make (in the order calls arrive). */
function queueFault(fake: FakeProvider, operation: Call['operation'], fault: ProviderFault | null) {
  if (fault === null) return;
  if (fault === 'outage') {
    fake.outage(2);
    return;
  }
  const named = <N extends string>(names: Record<'before' | 'after' | 'refuse', N>) =>
    fault === 'before' || fault === 'after' || fault === 'refuse' ? names[fault] : fault;
  if (operation === 'charge') fake.failNext(named(FAKE_FAULTS.charge));
  else if (operation === 'refund') fake.failNextRefund(named(FAKE_FAULTS.refund));
  else fake.failNextCapture(named(FAKE_FAULTS.capture));
}

function report(settled: Settled): string {
  return JSON.stringify(
    {
      unexpected: settled.unexpected,
      misjudged: settled.misjudged,
      violations: checkMoneyBooks(settled),
    },
    null,
    2,
  );
}

describe('random schedules of charges, captures and refunds, with crashes, provider faults, keys sent again, sweeps', () => {
  it(`never charge a key twice nor lose a charge, move money at most once per key, refund no more than was captured nor capture more than was authorized, and leave the books agreeing with the provider (${RUNS} schedules)`, async () => {
    await fc.assert(
      fc.asyncProperty(scheduleArb, async (schedule) => {
        const settled = await execute(schedule);
        const wrong = settled.unexpected.length + settled.misjudged.length;
        if (wrong > 0 || checkMoneyBooks(settled).length > 0) {
          throw new Error(`the books disagree:\n${report(settled)}`);
        }
      }),
      { numRuns: RUNS },
    );
    // The schedules reached what they are for (a handful, with CHARGEONCE_PROPERTY_RUNS, may not).
    if (RUNS >= 100) {
      const wanted = [
        ...['succeeded', 'failed', 'cancelled', 'charge_not_found', 'charge_not_succeeded'].flatMap(
          (end) => [`refund:${end}`, `capture:${end}`],
        ),
        'refund:exceeds_refundable',
        'refund:charge_not_captured',
        'capture:charge_not_capturable',
        'capture:exceeds_authorized',
        'charge:declined',
        'charge:cancelled',
        // Found at the provider after a crash or a lost answer, by a client or by the sweeper.
        'adopted:charge',
        'adopted:refund',
        'adopted:capture',
        'adopted:movement:client',
        'parked:charge',
        'parked:refund',
        'parked:capture',
        'crash:charge',
        'crash:refund',
        'crash:capture',
        'side by side',
        'sweep beside',
        // New refunds and captures judged against their charge as it stood.
        'judged:let through',
        'judged:exceeds_refundable',
        'judged:charge_not_succeeded',
      ];
      expect(wanted.filter((what) => !reached.has(what))).toEqual([]);
    }
  }, 600_000);
});

describe('the books check', () => {
  // The oracle must be able to say no: a schedule settled cleanly, then each side doctored as a
  // broken engine (or provider) would leave it, and the check must name what is wrong.
  let clean: Settled;
  beforeAll(async () => {
    clean = await execute({
      charges: [
        { amountMinor: 1_000, authorizeOnly: true, first: null },
        { amountMinor: 500, authorizeOnly: false, first: null },
      ],
      onAbandoned: 'cancel',
      settleBy: 'clients',
      ops: [
        { kind: 'charge', charge: 0, attempt: healthy(), ...inTurn() },
        { kind: 'charge', charge: 1, attempt: healthy(), ...inTurn() },
        movement('capture', 0, 600),
        movement('refund', 0, 200),
        movement('refund', 1, 300),
        { ...movement('refund', 0, 100), attempt: { ...healthy(), fault: 'after' } },
      ],
    });
  });

  const kinds = (settled: Settled) =>
    new Set(checkMoneyBooks(settled).map((v: MoneyViolation) => v.kind));
  const succeeded = <E extends { status: string }>(entries: readonly E[]) =>
    entries.filter((e) => e.status === 'succeeded');

  it('finds nothing wrong with books that agree', () => {
    expect(clean.unexpected).toEqual([]);
    expect(clean.misjudged).toEqual([]);
    expect(checkMoneyBooks(clean)).toEqual([]);
    expect(succeeded(clean.provider.refunds)).toHaveLength(3);
    expect(succeeded(clean.provider.captures)).toHaveLength(1);
  });

  it('finds a refund the provider made twice under one key', () => {
    const refund = succeeded(clean.provider.refunds)[0]!;
    const twice = { ...refund, id: `${refund.id}_again` };
    const found = kinds(withProvider({ refunds: [...clean.provider.refunds, twice] }));
    expect(found).toContain('double_movement');
  });

  it('finds an authorization captured twice, and more captured than authorized', () => {
    const capture = succeeded(clean.provider.captures)[0]!;
    const another = { ...capture, id: 'pcp_other', providerKey: 'another-key', amountMinor: 500 };
    const found = kinds(withProvider({ captures: [...clean.provider.captures, another] }));
    expect(found).toContain('captured_twice');
    expect(found).toContain('over_capture');
    expect(found).toContain('lost_movement');
  });

  it('finds more refunded than was captured', () => {
    const refund = succeeded(clean.provider.refunds).find((r) => r.amountMinor === 300)!;
    const bigger = clean.provider.refunds.map((r) =>
      r.id === refund.id ? { ...r, amountMinor: 501 } : r,
    );
    const found = kinds(withProvider({ refunds: bigger }));
    expect(found).toContain('over_refund');
    expect(found).toContain('movement_mismatch');
  });

  it('finds a charge made twice under one key, and a stored charge the provider never made', () => {
    const [first, ...rest] = clean.provider.charges;
    expect(
      kinds(withProvider({ charges: [first!, { ...first!, id: 'pch_twice' }, ...rest] })),
    ).toContain('double_charge');
    expect(kinds(withProvider({ charges: rest }))).toContain('phantom_charge');
  });

  it('finds a stored success the provider does not have', () => {
    const [, ...rest] = clean.provider.refunds;
    expect(kinds(withProvider({ refunds: rest }))).toContain('movement_mismatch');
  });

  it("finds charge totals that are not the provider's, and a reservation left held", () => {
    const doctor = (change: Partial<StoreBooks['charges'][number]>) => ({
      ...clean,
      store: {
        ...clean.store,
        charges: clean.store.charges.map((c, i) => (i === 0 ? { ...c, ...change } : c)),
      },
    });
    const first = clean.store.charges[0]!;
    expect(kinds(doctor({ refundedMinor: first.refundedMinor + 1 }))).toContain('totals_mismatch');
    expect(kinds(doctor({ refundReservedMinor: 1 }))).toContain('reservation_held');
  });

  it('finds a key left unfinished, and a reply that is not the stored one', () => {
    const unfinished = {
      ...clean,
      store: {
        ...clean.store,
        keys: clean.store.keys.map((k, i) => (i === 0 ? { ...k, recoveryPoint: 'reserved' } : k)),
      },
    };
    expect(kinds(unfinished)).toContain('unfinished_key');
    const [first, ...rest] = clean.seen;
    const changed = { ...clean, seen: [{ ...first!, body: `${first!.body} ` }, ...rest] };
    expect(kinds(changed)).toContain('replay_mismatch');
  });

  function withProvider(change: Partial<ProviderBooks>): Settled {
    return { ...clean, provider: { ...clean.provider, ...change } };
  }
});

function healthy(): Attempt {
  return { crash: null, fault: null, separateClaim: false };
}

function movement(kind: 'refund' | 'capture', charge: number, amountMinor: number): MovementOp {
  return {
    kind,
    charge,
    again: null,
    amountMinor,
    attempt: healthy(),
    ...inTurn(),
  };
}

/** An op that runs alone, with nothing after it. */
function inTurn(): Timing {
  return { together: false, sweepBeside: false, then: 'nothing' };
}
