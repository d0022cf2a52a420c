/** What a fake provider server remembers of one idempotency key. */
export type Remembered<E> = { entry: E; fingerprint: string; at: number };

/**
 * The idempotency keys a fake provider server still remembers, each for `windowMs` after it
 * was first used. Kept apart from the ledger on purpose: real providers expire the keys and keep
 * the records, which is why chargeonce's lookups search by key, not by cache.
 */
export type KeyMemory<E> = {
  /** What `key` was first used for, unless its window has passed (then it is forgotten). */
  recall(key: string, at: number): Remembered<E> | undefined;
  remember(key: string, remembered: Remembered<E>): void;
  /** Forgets every key now. */
  forget(): void;
};

/** Creates a {@link KeyMemory} whose keys last `windowMs` (`Infinity`: for ever). */
export function createKeyMemory<E>(windowMs: number): KeyMemory<E> {
  let remembered = new Map<string, Remembered<E>>();
  return {
    recall(key, at) {
      const hit = remembered.get(key);
      if (hit && at - hit.at >= windowMs) {
        remembered.delete(key);
        return undefined;
      }
      return hit;
    },
    remember(key, value) {
      remembered.set(key, value);
    },
    forget() {
      remembered = new Map();
    },
  };
}
