import { StoreUnavailableError } from '../errors.js';
import type { ScopedKey } from '../store/keyState.js';
import { renewLease } from '../store/renewLease.js';
import { withStore } from '../store/storeErrors.js';
import type { EngineEnv } from './engineEnv.js';
import { lostLease } from './parkKey.js';
import { releaseQuietly } from './releaseQuietly.js';

/**
 * The lease an attempt holds, as this process measures it: `setAt` is the engine clock's reading
 * taken before the statement that set the lease was sent (before the pool connection was even
 * asked for). PostgreSQL sets `locked_until` from its `now()`, which is later, so
 * `setAt + leaseMs` is never after the real end of the lease: whatever ran since (a slow hook, a
 * COMMIT that stalled, a wait for a connection, a paused process) is counted against it.
 */
export type HeldLease = { setAt: number };

/** A key this attempt holds, with its lease. */
export type LeasedKey = { scoped: ScopedKey; lockToken: string; lease: HeldLease };

/** How much of the lease is left, on the engine's monotonic clock. */
export function leaseLeftMs(env: EngineEnv, lease: HeldLease): number {
  return lease.setAt + env.leaseMs - env.clock.now();
}

/**
 * The rule the sweeper's cancel relies on: **no attempt is at the provider under a key whose
 * lease has run out.** An attempt calls the provider only while its lease outlasts the whole
 * provider budget plus `leaseMarginMs`; the budget then ends (and the call is aborted) before the
 * lease does. When too little is left, the lease is renewed with one fenced statement; if that
 * fails the key was taken over (`lease_lost`; the caller gets `IdempotencyKeyInUseError`; the
 * event names `subjectId`, the charge or movement the key guards), and if even the
 * renewal was too slow to leave enough, the key is released and the attempt stops.
 *
 * Null when the lease already covers it (nearly every call: a charge's claim took its lease
 * moments ago), so the caller spends no promise on it; else the renewal, to await.
 *
 * Its renewal rejects with:
 * - `IdempotencyKeyInUseError`: the lease was lost to another attempt.
 * - `StoreUnavailableError`: PostgreSQL answered too slowly to hold a lease over the call.
 */
export function coverProviderBudget(
  env: EngineEnv,
  held: LeasedKey,
  subjectId: string,
): Promise<void> | null {
  const needed = env.providerTimeoutMs + env.leaseMarginMs;
  return leaseLeftMs(env, held.lease) >= needed
    ? null
    : renewForBudget(env, held, subjectId, needed);
}

async function renewForBudget(
  env: EngineEnv,
  held: LeasedKey,
  subjectId: string,
  needed: number,
): Promise<void> {
  const sentAt = env.clock.now();
  const pool = await env.pool();
  const renewed = await withStore(() =>
    renewLease(pool, env.tables, {
      merchantId: held.scoped.merchantId,
      operation: held.scoped.operation,
      key: held.scoped.key,
      lockToken: held.lockToken,
      leaseMs: env.leaseMs,
    }),
  );
  // Taken over meanwhile: reported (`lease_lost`) as every fenced write that finds it so.
  if (!renewed) throw lostLease(env, { scoped: held.scoped, lockToken: held.lockToken, subjectId });
  held.lease.setAt = sentAt;
  if (leaseLeftMs(env, held.lease) >= needed) return;
  await releaseQuietly(env, held, 'lease renewal too slow to cover the provider budget');
  throw new StoreUnavailableError({ retryAfterMs: env.leaseMarginMs });
}
