import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';
import type { ChargeRequest } from '../../src/request.js';
import { deriveProviderKey, validateChargeRequest } from '../../src/request.js';
import type { Tables } from '../../src/store/tables.js';
import { createFakeProvider, type FakeProvider } from '../../src/provider/createFakeProvider.js';
import type { SweepResult } from '../../src/recovery/sweep.js';
import { createChargeEngine, type PaymentProvider, type PgPoolLike } from '../../src/index.js';

/** A valid request; override what a test cares about. */
export function aRequest(overrides: Partial<ChargeRequest> = {}): ChargeRequest {
  return {
    merchantId: 'm_1',
    customerId: 'c_42',
    amountMinor: 2000,
    currency: 'NGN',
    ...overrides,
  };
}

/** A key no other test uses. */
export function aKey(): string {
  return `key-${randomUUID()}`;
}

const keyRow = z.object({
  recovery_point: z.string(),
  lock_token: z.string().nullable(),
  attempts: z.number(),
  response_status: z.number().nullable(),
  response_body: z.string().nullable(),
  charge_id: z.string(),
});

/** The stored key row, straight from the table. */
export async function readKey(pool: DatabasePool, tables: Tables, merchantId: string, key: string) {
  return pool.maybeOne(sql.type(keyRow)`
    SELECT recovery_point, lock_token::text, attempts, response_status, response_body,
      charge_id::text
    FROM ${tables.keys} WHERE merchant_id = ${merchantId} AND operation = 'charge' AND key = ${key}`);
}

const chargeRow = z.object({
  id: z.string(),
  status: z.string(),
  provider_key: z.string(),
  provider_charge_id: z.string().nullable(),
  amount_minor: z.number(),
});

/** Every local charge row of a merchant. */
export async function readCharges(pool: DatabasePool, tables: Tables, merchantId: string) {
  return pool.any(sql.type(chargeRow)`
    SELECT id::text, status, provider_key, provider_charge_id, amount_minor::float8 AS amount_minor
    FROM ${tables.charges} WHERE merchant_id = ${merchantId}`);
}

/** How many rows a table holds. */
export async function countRows(pool: DatabasePool, table: Tables['keys']): Promise<number> {
  return pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int4 AS n FROM ${table}`,
  );
}

/**
 * Writes a key as an interrupted attempt would have left it at `point`, with its lease already
 * run out: what a retry or a recovery worker finds after a crash. Returns its provider key.
 */
export async function seedInterruptedKey(
  pool: DatabasePool,
  tables: Tables,
  key: string,
  request: ChargeRequest,
  point: 'started' | 'reserved',
): Promise<{ chargeId: string; providerKey: string }> {
  const v = validateChargeRequest(key, request);
  const chargeId = randomUUID();
  const providerKey = deriveProviderKey(request.merchantId, 'charge', key, chargeId);
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until)
      VALUES (${request.merchantId}, 'charge', ${key}, ${v.fingerprint}, ${v.canonical}, ${point},
        ${chargeId}::uuid, ${randomUUID()}::uuid, now() - interval '1 second')`);
    if (point === 'reserved') {
      await tx.query(sql.unsafe`
        INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
          provider_key, status)
        VALUES (${request.merchantId}, ${chargeId}::uuid, ${request.customerId},
          ${request.amountMinor}, ${request.currency}, ${providerKey}, 'reserved')`);
    }
  });
  return { chargeId, providerKey };
}

/** Ends the lease of a key now, as if its holder had stalled past `leaseMs`. */
export async function expireLease(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  key: string,
) {
  await pool.query(sql.unsafe`
    UPDATE ${tables.keys} SET locked_until = now() - interval '1 millisecond'
    WHERE merchant_id = ${merchantId} AND key = ${key}`);
}

/** What `promise` settles to: its value, or the error it rejects with. */
export const answerOf = (promise: Promise<unknown>) => promise.catch((e: unknown) => e);

/**
 * Whether `promise` settles within a generous bound (10 s): for "this call is not held up by that
 * one", not a timing assertion.
 */
export async function settlesSoon(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await waitFor(() => Promise.resolve(settled), 10_000).catch(() => undefined);
  return settled;
}

/** Polls `check` until it holds; for waiting on another attempt's progress, not for timing. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The charge a seeded key's attempt made at the provider before its answer was lost: under the
 * key's provider key, for the request's amount.
 */
export function chargeAtProvider(
  provider: Pick<FakeProvider, 'createCharge'>,
  seed: { providerKey: string; chargeId: string },
  request: ChargeRequest,
) {
  return provider.createCharge(
    {
      providerKey: seed.providerKey,
      merchantId: request.merchantId,
      chargeId: seed.chargeId,
      customerId: request.customerId,
      amountMinor: request.amountMinor,
      currency: request.currency,
    },
    { signal: new AbortController().signal },
  );
}

/** How many backends of the pool's database wait on a lock right now. */
export async function waitingOnLocks(pool: DatabasePool): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int4 AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`);
}

/** A gate a fake provider call can wait on, opened by the test. */
export function aGate(): { wait: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

/**
 * Writes `count` keys of `operation` as crashed attempts leave them at `reserved` (intent
 * written, lease run out, last activity a minute ago), in one statement. Returns each key's
 * provider key.
 */
export async function seedAbandonedKeys(
  pool: DatabasePool,
  tables: Tables,
  count: number,
  request: ChargeRequest = aRequest(),
  operation = 'charge',
): Promise<Array<{ key: string; chargeId: string; providerKey: string }>> {
  const seeds = Array.from({ length: count }, () => {
    const key = aKey();
    const chargeId = randomUUID();
    return {
      key,
      chargeId,
      providerKey: deriveProviderKey(request.merchantId, operation, key, chargeId),
    };
  });
  const v = validateChargeRequest('seed', request);
  const keys = seeds.map((s) => s.key);
  const chargeIds = seeds.map((s) => s.chargeId);
  const providerKeys = seeds.map((s) => s.providerKey);
  await pool.query(sql.unsafe`
    WITH seeded AS (
      SELECT * FROM unnest(${sql.array(keys, 'text')}, ${sql.array(chargeIds, 'uuid')},
        ${sql.array(providerKeys, 'text')}) AS s(key, charge_id, provider_key)
    ), keys AS (
      INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until, updated_at)
      SELECT ${request.merchantId}, ${operation}, key, ${v.fingerprint}, ${v.canonical}, 'reserved',
        charge_id, gen_random_uuid(), now() - interval '1 minute', now() - interval '1 minute'
      FROM seeded
    )
    INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
      provider_key, status)
    SELECT ${request.merchantId}, charge_id, ${request.customerId}, ${request.amountMinor},
      ${request.currency}, provider_key, 'reserved'
    FROM seeded`);
  return seeds;
}

/**
 * A fake provider that runs `sweep` while it is being asked to charge: a recovery worker racing
 * an attempt that is at the provider. `swept()` is what that sweep did, or null if none ran.
 */
export function sweepingDuringCharge(sweep: () => Promise<SweepResult>): {
  provider: FakeProvider;
  swept: () => SweepResult | null;
} {
  let swept: SweepResult | null = null;
  const provider = createFakeProvider({
    beforeAnswer: async (method) => {
      if (method === 'createCharge') swept = await sweep();
    },
  });
  return { provider, swept: () => swept };
}

/** A succeeded charge of `amountMinor` (1,000 by default), made through `provider`: its id. */
export async function aSucceededCharge(
  pool: PgPoolLike,
  provider: PaymentProvider,
  merchantId: string,
  amountMinor = 1000,
): Promise<string> {
  const engine = createChargeEngine({ pool, provider });
  const outcome = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor }));
  return outcome.chargeId;
}
