import { describe, expect, it } from 'vitest';
import { createStripeProvider } from '../../src/stripe/index.js';

/** A Stripe client that records the request options of each charge it is asked to create. */
function aRecordingStripe() {
  const options: unknown[] = [];
  const charge = {
    id: 'ch_1',
    object: 'charge',
    amount: 500,
    currency: 'eur',
    status: 'succeeded',
    captured: true,
  };
  const stripe = {
    charges: {
      create: (params: { metadata: unknown }, requestOptions: unknown) => {
        options.push(requestOptions);
        // Stripe echoes the metadata it was sent: the adapter checks it is its own charge.
        return Promise.resolve({ ...charge, metadata: params.metadata });
      },
    },
    refunds: { create: () => Promise.reject(new Error('not here')) },
  };
  return { stripe, options };
}

const input = {
  merchantId: 'm_1',
  providerKey: 'pk_1',
  customerId: 'c_1',
  amountMinor: 500,
  currency: 'EUR',
};

describe("the Stripe adapter's timeout per request", () => {
  it('is 10 s unless told: an abandoned request must end well inside the sweeper grace', async () => {
    const recording = aRecordingStripe();
    const provider = createStripeProvider({ stripe: recording.stripe as never });
    await provider.createCharge(input as never, { signal: new AbortController().signal });
    expect(recording.options).toEqual([
      expect.objectContaining({ timeout: 10_000, idempotencyKey: 'pk_1' }),
    ]);
  });

  it('is the one given', async () => {
    const recording = aRecordingStripe();
    const provider = createStripeProvider({
      stripe: recording.stripe as never,
      requestTimeoutMs: 25_000,
    });
    await provider.createCharge(input as never, { signal: new AbortController().signal });
    expect(recording.options).toEqual([expect.objectContaining({ timeout: 25_000 })]);
  });
});
