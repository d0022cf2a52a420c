import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type { ChargeHooks } from '../engine/types.js';
import { InvalidConfigurationError } from '../errors.js';
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
 * @throws {InvalidConfigurationError} when the module cannot be loaded (not found, or it threw
 * as it loaded or made its provider) or exports no provider: the command line named a module
 * that cannot serve (exit 2), and nothing ran.
 */
export async function loadProvider(modulePath: string): Promise<LoadedProvider> {
  const module = (await import(pathToFileURL(resolve(modulePath)).href).catch((error: unknown) => {
    throw notLoaded(modulePath, 'could not be loaded', error);
  })) as { default?: unknown; hooks?: ChargeHooks };
  const exported = module.default;
  let provider: unknown = exported;
  if (typeof exported === 'function') {
    try {
      provider = await (exported as () => unknown)();
    } catch (error) {
      throw notLoaded(modulePath, 'threw as it made its provider', error);
    }
  }
  if (!isProvider(provider)) {
    throw new InvalidConfigurationError(
      `${modulePath} must export a PaymentProvider (createCharge and findCharge) as its default export, or a function returning one`,
    );
  }
  return { provider, ...(module.hooks ? { hooks: module.hooks } : {}) };
}

function notLoaded(modulePath: string, what: string, error: unknown): InvalidConfigurationError {
  const why = error instanceof Error ? error.message : String(error);
  return new InvalidConfigurationError(`--provider ${modulePath} ${what}: ${why}`, {
    cause: error,
  });
}
