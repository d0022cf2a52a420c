import { describe, expect, it } from 'vitest';
import { InvalidConfigurationError } from '../../src/index.js';
import { missingStripePackages } from '../../src/cli/chaosCommand.js';

/** A package no project installs: importing it fails as importing a missing one does. */
const NOT_INSTALLED: string = 'stripe-not-installed-anywhere';

describe('chaos --provider stripe without its packages', () => {
  it('says which packages to install when Node cannot find stripe or the emulator', async () => {
    // What Node says for a package it cannot find, here one that is surely not installed.
    const real = (await import(NOT_INSTALLED).catch((error: unknown) => error)) as Error & {
      code: string;
    };
    expect(real.code).toBe('ERR_MODULE_NOT_FOUND');
    const missing = Object.assign(new Error(real.message.replace(NOT_INSTALLED, 'stripe')), {
      code: real.code,
    });

    const error = missingStripePackages(missing);
    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect(error?.message).toBe(
      '--provider stripe needs the packages stripe and stripe-stateful-mock: npm install --save-dev stripe stripe-stateful-mock',
    );
    expect(error?.cause).toBe(missing);
  });

  it('leaves any other failure as it is', async () => {
    const other: unknown = await import(NOT_INSTALLED).catch((e: unknown) => e);
    expect(missingStripePackages(other)).toBeNull();
    expect(missingStripePackages(new Error("Cannot find package 'stripe'"))).toBeNull();
    expect(missingStripePackages(null)).toBeNull();
  });
});
