/**
 * A small seeded PRNG (mulberry32): the same seed gives the same sequence of numbers in [0, 1),
 * so a fault-injection run that failed can be replayed exactly. Not for anything secret.
 */
export function seededRandom(seed: number): () => number {
  if (!Number.isFinite(seed)) throw new RangeError(`seed must be a finite number, got ${seed}`);
  // Any finite number works as a seed; only its low 32 bits are state.
  let state = Math.trunc(seed) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
