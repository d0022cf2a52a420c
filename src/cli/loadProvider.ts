import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type { ChargeHooks } from '../engine/types.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import { importProviderModule } from '../provider/importProviderModule.js';

/** What a `--provider` module gives the commands. */
export type LoadedProvider = { provider: PaymentProvider; hooks?: ChargeHooks };

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
  const { module, provider } = await importProviderModule(
    pathToFileURL(resolve(modulePath)).href,
    modulePath,
    undefined,
    'a PaymentProvider (createCharge and findCharge), or a function returning one',
  );
  const hooks = module.hooks as ChargeHooks | undefined;
  return { provider, ...(hooks ? { hooks } : {}) };
}
