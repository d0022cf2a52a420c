/**
 * Errors a hook's own statements met. A missing table or column in your SQL is your SQL's error,
 * even when its name is one of chargeonce's (an `orders.failure_code` of yours): these are never
 * read as chargeonce's schema not being migrated. Connection loss still is an outage.
 */
const fromHooks = new WeakSet<object>();

/** Notes `error` as met by a hook's statement; returns it. */
export function markHookError(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) fromHooks.add(error);
  return error;
}

/** True when `error` was met by a hook's statement. */
export function isHookError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && fromHooks.has(error);
}
