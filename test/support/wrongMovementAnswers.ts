import type { PaymentProvider } from '../../src/index.js';
import type { createFakeProvider } from '../../src/testing/index.js';

/**
 * The fake provider, except while `wrong()` says so: then a refund or capture is answered for
 * another amount and nothing is recorded, an answer the engine must refuse by parking the key
 * (how the admin tests get a parked refund or capture to resolve).
 */
export function withWrongMovementAnswers(
  fake: ReturnType<typeof createFakeProvider>,
  wrong: () => boolean,
): PaymentProvider {
  const answer = (id: string, input: { amountMinor: number; currency: string }) =>
    Promise.resolve({
      id,
      status: 'succeeded' as const,
      amountMinor: input.amountMinor + 1,
      currency: input.currency,
    });
  return {
    createCharge: (input, opts) => fake.createCharge(input, opts),
    findCharge: (key, opts) => fake.findCharge(key, opts),
    createRefund: (input, opts) =>
      wrong() ? answer('re_wrong', input) : fake.createRefund(input, opts),
    findRefund: (key, opts) => fake.findRefund(key, opts),
    capture: (input, opts) => (wrong() ? answer('cap_wrong', input) : fake.capture(input, opts)),
    findCapture: (input, opts) => fake.findCapture(input, opts),
  };
}
