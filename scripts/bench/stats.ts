/** The nearest-rank percentile `p` (0–100) of `values`, which need not be sorted. */
export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

/** The median of `values`: the middle one, or the mean of the middle two. */
export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const mid = finite.length >> 1;
  const upper = finite[mid] ?? Number.NaN;
  return finite.length % 2 === 1 ? upper : ((finite[mid - 1] ?? Number.NaN) + upper) / 2;
}
