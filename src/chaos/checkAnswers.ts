import type { ObservedResponse } from './reconcile.js';

/** A replay that differs from the stored body, or from the first answer when none is stored. */
export type ReplayMismatch = {
  kind: 'replay_mismatch';
  merchantId: string;
  key: string;
  detail: string;
};

/**
 * The answers clients saw under each key, checked against the body the key stores: byte for
 * byte the same. A key reaped to a tombstone stores none any more (`null`); its answers are
 * checked against each other, every one the same bytes as the first. A key not found (a
 * rejection before anything was written, or another kind of key) is not this check's.
 */
export function checkAnswers(
  observations: readonly ObservedResponse[],
  storedBody: (merchantId: string, key: string) => string | null | undefined,
): ReplayMismatch[] {
  const found: ReplayMismatch[] = [];
  const firstSeen = new Map<string, string>();
  for (const seen of observations) {
    const stored = storedBody(seen.merchantId, seen.key);
    if (stored === undefined) continue;
    const mismatch = (detail: string) =>
      found.push({ kind: 'replay_mismatch', merchantId: seen.merchantId, key: seen.key, detail });
    if (stored !== null) {
      if (stored !== seen.body) {
        mismatch(`client saw ${seen.body.slice(0, 120)}; stored ${stored.slice(0, 120)}`);
      }
      continue;
    }
    const slot = `${seen.merchantId}\u0000${seen.key}`;
    const first = firstSeen.get(slot);
    if (first === undefined) firstSeen.set(slot, seen.body);
    else if (first !== seen.body) {
      mismatch(
        `client saw ${seen.body.slice(0, 120)}; an earlier answer was ${first.slice(0, 120)}`,
      );
    }
  }
  return found;
}
