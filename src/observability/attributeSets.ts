import type { Attributes } from '@opentelemetry/api';

/** Distinct attribute sets kept at most: beyond, a set is built on every call (and not kept). */
const MAX_SETS = 1_000;

/**
 * A cache of attribute sets, one frozen set per distinct `id`, so that the hot path builds no
 * object per measurement. The SDK keeps the first set it sees for each series: a cached set is
 * never changed.
 */
export function attributeSets(): (id: string, build: () => Attributes) => Attributes {
  const sets = new Map<string, Attributes>();
  return (id, build) => {
    let set = sets.get(id);
    if (!set) {
      set = Object.freeze(build());
      if (sets.size < MAX_SETS) sets.set(id, set);
    }
    return set;
  };
}
