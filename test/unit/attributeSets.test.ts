import { describe, expect, it } from 'vitest';
import { attributeSets } from '../../src/observability/attributeSets.js';

describe('attributeSets', () => {
  it('builds each pair once and hands back the same entry after', () => {
    const built: string[] = [];
    const sets = attributeSets((a, b) => {
      built.push(`${a}/${b}`);
      return { a, b };
    });
    const first = sets('charge', 'succeeded');
    expect(sets('charge', 'succeeded')).toBe(first);
    // No pair is mistaken for another that would concatenate to the same text.
    expect(sets('charge\u0000succeeded', '')).toEqual({ a: 'charge\u0000succeeded', b: '' });
    expect(sets('charge', 'declined')).toEqual({ a: 'charge', b: 'declined' });
    expect(built).toEqual(['charge/succeeded', 'charge\u0000succeeded/', 'charge/declined']);
  });

  it('past its bound, still the right entry for every pair, built anew instead of kept', () => {
    let builds = 0;
    const sets = attributeSets((a, b) => {
      builds += 1;
      return { a, b };
    });
    const pairs = Array.from({ length: 1_200 }, (_, i) => [`op${i % 7}`, `status${i}`] as const);
    for (const [a, b] of pairs) expect(sets(a, b)).toEqual({ a, b });
    expect(builds).toBe(1_200);
    // Asked again: the first thousand were kept, the rest are built again, each still right.
    for (const [a, b] of pairs) expect(sets(a, b)).toEqual({ a, b });
    expect(builds).toBe(1_400);
  });
});
