import { describe, expect, it } from 'vitest';
import { InvalidConfigurationError, migrate } from '../../src/index.js';
import { createChargeClient } from '../../src/client/index.js';
import { createChargeHandler } from '../../src/http/index.js';
import { createStripeProvider } from '../../src/stripe/index.js';

// Called from JavaScript with nothing, each says what it needs as a chargeonce error (the README:
// every error chargeonce throws extends ChargeOnceError), never a TypeError from reading it.
describe('a factory called without its options', () => {
  it('createChargeClient()', () => {
    expect(() => createChargeClient(undefined as never)).toThrow(InvalidConfigurationError);
    expect(() => createChargeClient(null as never)).toThrow(/baseUrl/);
  });

  it('createStripeProvider()', () => {
    expect(() => createStripeProvider(undefined as never)).toThrow(InvalidConfigurationError);
  });

  it('migrate()', async () => {
    await expect(migrate(undefined as never)).rejects.toBeInstanceOf(InvalidConfigurationError);
    await expect(migrate(42 as never)).rejects.toBeInstanceOf(InvalidConfigurationError);
  });

  it('createChargeHandler()', () => {
    expect(() => (createChargeHandler as () => unknown)()).toThrow(InvalidConfigurationError);
  });
});
