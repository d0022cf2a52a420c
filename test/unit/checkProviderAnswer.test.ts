import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseAnswer, wellFormed } from '../../src/engine/checkProviderAnswer.js';

// The provider answer's check by hand must take exactly what the schema takes, and keep what the
// schema keeps (the port's fields, in the same order); anything else goes to the schema, which
// words the refusal.

const text = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom('', 'ch_1', 'x'.repeat(255), 'x'.repeat(256)),
);

const answerLike = fc.oneof(
  fc.record(
    {
      id: fc.oneof(text, fc.integer(), fc.constant(null)),
      status: fc.oneof(fc.constantFrom('succeeded', 'declined', 'pending', 'SUCCEEDED'), text),
      amountMinor: fc.oneof(
        fc.integer({ min: -3, max: 100_000 }),
        fc.double(),
        fc.constantFrom(1.5, NaN, Infinity, -0, '100', 2 ** 60),
      ),
      currency: fc.oneof(fc.constantFrom('USD', 'usd', ''), fc.integer()),
      declineCode: fc.oneof(fc.constant(undefined), text, fc.integer()),
      extra: fc.anything(),
    },
    { requiredKeys: [] },
  ),
  fc.anything(),
);

describe('provider answer check by hand', () => {
  it('takes what the schema takes and nothing else, with the same fields', () => {
    fc.assert(
      fc.property(answerLike, (answer) => {
        const byHand = wellFormed(answer);
        const bySchema = parseAnswer(answer);
        if (byHand === null) {
          expect(typeof bySchema).toBe('string');
        } else {
          expect(JSON.stringify(byHand)).toBe(JSON.stringify(bySchema));
          expect(Object.keys(byHand)).toEqual(Object.keys(bySchema));
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('takes an ordinary charge and a decline', () => {
    const charge = { id: 'ch_1', status: 'succeeded', amountMinor: 500, currency: 'USD' };
    expect(wellFormed({ ...charge, providerOnly: true })).toEqual(charge);
    const decline = { ...charge, status: 'declined', declineCode: 'card_declined' };
    expect(wellFormed(decline)).toEqual(decline);
  });
});
