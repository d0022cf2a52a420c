import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type { ChargeHooks } from '../engine/types.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';

/** What a `--provider` module gives the commands. */
export type LoadedProvider = { provider: PaymentProvider; hooks?: ChargeHooks };

function isProvider(value: unknown): value is PaymentProvider {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PaymentProvider).createCharge === 'function' &&
    typeof (value as PaymentProvider).findCharge === 'function'
  );
}

/**
 * Imports the user's provider adapter module. Its default export is a `PaymentProvider`, or a
 * function (sync or async) that returns one; an optional named export `hooks` supplies the
 * engine's hooks (the sweeper's `cancel`, say).
 *
 * @throws {Error} when the module exports no provider.
 */
export async function loadProvider(modulePath: string): Promise<LoadedProvider> {
  const module = (await import(pathToFileURL(resolve(modulePath)).href)) as {
    default?: unknown;
    hooks?: ChargeHooks;
  };
  const exported = module.default;
  const provider: unknown =
    typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!isProvider(provider)) {
    throw new Error(
      `${modulePath} must export a PaymentProvider (createCharge and findCharge) as its default export, or a function returning one`,
    );
  }
  return { provider, ...(module.hooks ? { hooks: module.hooks } : {}) };
}
