import { countingProviderCalls } from './hostSuspend.js';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHttpProvider } from '../provider/createHttpProvider.js';
import { InvalidConfigurationError } from '../errors.js';
import { importProviderModule } from '../provider/importProviderModule.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import type { MovementLedger, ProviderLedgerEntry } from './reconcile.js';

/** What a provider module's default export may be: a factory, or a ready adapter. */
export type ChaosProviderFactory = (context: {
  /** The harness's fake provider server, e.g. `http://127.0.0.1:40123`. */
  baseUrl: string;
}) => PaymentProvider | Promise<PaymentProvider>;

/**
 * The contract of a provider module given to the chaos harness (`providerModule`, the `chaos`
 * command's `--provider`), an ES module:
 *
 * - `default`: a {@link ChaosProviderFactory}, called with the fake provider server's `baseUrl`
 *   in every worker process and in the harness itself, so your adapter can be pointed at the
 *   fake server (whose API it must then speak, or translate); or a `PaymentProvider` object,
 *   used as it is, talking to wherever it talks (a sandbox, say).
 * - `ledger` (optional): every charge your provider really made during the run, duplicates
 *   included. When present the reconciler checks against it instead of the fake server's
 *   ledger; a plain `PaymentProvider` that does not use the fake server needs it, or every
 *   charge it makes looks like one the provider never made.
 * - `movementLedger` (optional, with `ledger`): every refund and capture your provider
 *   recorded, refused ones and duplicates included, each with the `providerKey` it was made
 *   under. Without it the run has no refunds or captures (`movementRate` is taken as 0): the
 *   reconciler could not check them.
 *
 * The module is imported by path in each worker, so it must be loadable on its own (from a
 * `.ts` file only when chargeonce itself runs from its TypeScript sources).
 */
export type ChaosProviderModule = {
  default: ChaosProviderFactory | PaymentProvider;
  ledger?: () => Promise<readonly ProviderLedgerEntry[]>;
  movementLedger?: () => Promise<MovementLedger>;
};

/** A provider ready to use, and its ledgers when the module has them. */
export type LoadedChaosProvider = {
  provider: PaymentProvider;
  ledger: (() => Promise<readonly ProviderLedgerEntry[]>) | undefined;
  movementLedger: (() => Promise<MovementLedger>) | undefined;
};

/** A module path as an import specifier that works from any process and directory. */
export function providerModuleUrl(modulePath: string): string {
  if (modulePath.startsWith('file:')) return modulePath;
  return pathToFileURL(isAbsolute(modulePath) ? modulePath : resolve(modulePath)).href;
}

/**
 * Loads the provider of a chaos run: the module's (see {@link ChaosProviderModule}), or the
 * built-in HTTP adapter on the fake server at `baseUrl` when there is no module.
 *
 * @param shown the module as the person typed it (`--provider`), for messages.
 * @throws {InvalidConfigurationError} the module cannot be loaded, throws as it makes its
 * provider, or exports neither a factory nor a `PaymentProvider` (see `importProviderModule`).
 */
export async function loadChaosProvider(
  moduleUrl: string | undefined,
  baseUrl: string,
  shown?: string,
): Promise<LoadedChaosProvider> {
  if (moduleUrl === undefined) {
    return {
      // Counted, as every provider of a chaos process is: a host is suspended only between calls.
      provider: countingProviderCalls(createHttpProvider({ baseUrl })),
      ledger: undefined,
      movementLedger: undefined,
    };
  }
  const { module, provider } = await importProviderModule(
    moduleUrl,
    shown ?? moduleUrl,
    { baseUrl },
    'a PaymentProvider (createCharge and findCharge) or a function ({ baseUrl }) => PaymentProvider',
  );
  const { ledger, movementLedger } = module;
  for (const [name, value] of Object.entries({ ledger, movementLedger })) {
    if (value !== undefined && typeof value !== 'function') {
      throw new InvalidConfigurationError(
        `${shown ?? moduleUrl}: the ${name} export must be a function`,
      );
    }
  }
  return {
    provider: countingProviderCalls(provider),
    ledger: ledger as (() => Promise<readonly ProviderLedgerEntry[]>) | undefined,
    movementLedger: movementLedger as (() => Promise<MovementLedger>) | undefined,
  };
}
