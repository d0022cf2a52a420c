import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';

/** A running stripe-stateful-mock. */
export type StripeEmulator = {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  close(): Promise<void>;
};

/** A test secret key: stripe-stateful-mock accepts any key that starts with `sk_test_`. */
export const EMULATOR_SECRET_KEY = 'sk_test_chargeonce_emulator';

type EmulatorModule = {
  createExpressApp(): { listen(port: number, host: string, callback: () => void): Server };
};
type LogLevel = { setLevel(level: string): void };

/**
 * Starts stripe-stateful-mock (a third-party stateful Stripe emulator, a development
 * dependency) in this process, on a free loopback port. Its state (charges, idempotency keys)
 * belongs to the process, not to the server: every emulator started in one process shares it,
 * so callers tell their charges apart by metadata.
 *
 * Its currency list predates Stripe's support for some currencies; `extraCurrencies` (lower
 * case ISO codes) are added to it.
 *
 * @throws {Error} stripe-stateful-mock is not installed.
 */
export async function startStripeEmulator(
  options: { extraCurrencies?: readonly string[] } = {},
): Promise<StripeEmulator> {
  const require = createRequire(import.meta.url);
  let emulator: EmulatorModule;
  try {
    emulator = require('stripe-stateful-mock') as EmulatorModule;
  } catch (error) {
    throw new Error(
      'The Stripe emulator needs the stripe-stateful-mock package (npm install --save-dev stripe-stateful-mock)',
      { cause: error },
    );
  }
  // Its own loglevel: an idempotency mismatch or a 500 is logged as an error, which here is
  // the point of the exercise.
  const fromEmulator = createRequire(require.resolve('stripe-stateful-mock'));
  (fromEmulator('loglevel') as LogLevel).setLevel('silent');
  if (options.extraCurrencies?.length) {
    const { verify } = fromEmulator('./api/verify') as {
      verify?: { validCurrencies?: string[] };
    };
    const currencies = verify?.validCurrencies;
    if (!Array.isArray(currencies)) {
      throw new Error('stripe-stateful-mock: its currency list was not found to extend');
    }
    for (const code of options.extraCurrencies) {
      if (!currencies.includes(code)) currencies.push(code);
    }
  }

  const app = emulator.createExpressApp();
  const server = await new Promise<Server>((resolve, reject) => {
    const listening: Server = app.listen(0, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
