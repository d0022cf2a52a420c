import { describe, expect, it } from 'vitest';
import { checkAnswers } from '../../src/chaos/checkAnswers.js';

const seen = (key: string, body: string) => ({ merchantId: 'm', key, body });

describe('checkAnswers', () => {
  it('checks answers against the stored body, and under a tombstone against each other', () => {
    const stored: Record<string, string | null> = { kept: '{"a":1}', reaped: null };
    const found = checkAnswers(
      [
        seen('kept', '{"a":1}'),
        seen('kept', '{"a":2}'),
        seen('reaped', '{"b":1}'),
        seen('reaped', '{"b":1}'),
        seen('reaped', '{"b":1}\n'),
        seen('unknown', 'anything'),
      ],
      (_merchantId, key) => stored[key],
    );

    expect(found.map((f) => [f.key, f.detail])).toEqual([
      ['kept', 'client saw {"a":2}; stored {"a":1}'],
      ['reaped', 'client saw {"b":1}\n; an earlier answer was {"b":1}'],
    ]);
  });
});
