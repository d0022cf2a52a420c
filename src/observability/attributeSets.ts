/** Entries kept at most: beyond, an entry is built on every call (and not kept). */
const MAX_ENTRIES = 1_000;

/**
 * A cache of what a measurement needs (its attribute set, its series' id), one entry per pair of
 * values (an operation and a status, say), built once: the hot path then builds no object, no
 * closure and no string per measurement, and a lookup hashes strings it was given (constants,
 * whose hash V8 keeps) rather than one concatenated per call. The SDK keeps the first attribute
 * set it sees for each series: an entry is never changed.
 */
export function attributeSets<T>(build: (a: string, b: string) => T): (a: string, b: string) => T {
  const entries = new Map<string, Map<string, T>>();
  let size = 0;
  return (a, b) => {
    let byB = entries.get(a);
    const found = byB?.get(b);
    if (found !== undefined) return found;
    const entry = build(a, b);
    if (size < MAX_ENTRIES) {
      if (!byB) entries.set(a, (byB = new Map<string, T>()));
      byB.set(b, entry);
      size += 1;
    }
    return entry;
  };
}
