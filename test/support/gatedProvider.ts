import type { PaymentProvider } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';

/** A provider whose charges wait until the test calls `open`; the fake records them. */
export function gatedProvider() {
  const fake = createFakeProvider();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const provider: PaymentProvider = {
    createCharge: async (input, options) => {
      await gate;
      return fake.createCharge(input, options);
    },
    findCharge: (key, options) => fake.findCharge(key, options),
  };
  return { provider, open, fake };
}
