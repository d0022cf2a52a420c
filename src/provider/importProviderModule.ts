import { InvalidConfigurationError } from '../errors.js';
import type { PaymentProvider } from './PaymentProvider.js';

/** Whether `value` has the two calls every adapter answers. */
export function isPaymentProvider(value: unknown): value is PaymentProvider {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PaymentProvider).createCharge === 'function' &&
    typeof (value as PaymentProvider).findCharge === 'function'
  );
}

/**
 * Imports an adapter module a command was given (`--provider`) and makes its provider: the
 * default export, or what the default export returns when called with `factoryArgument`. A
 * module that cannot be loaded, throws as it makes its provider, or exports none is the command
 * line's mistake, said as configuration (the commands exit 2), naming the module as given.
 *
 * @param shown the module as the person typed it.
 * @param expected what the default export must be, for the message.
 * @throws {InvalidConfigurationError} see above; the module's own error is its cause.
 */
export async function importProviderModule(
  url: string,
  shown: string,
  factoryArgument: unknown,
  expected: string,
): Promise<{ module: Record<string, unknown>; provider: PaymentProvider }> {
  const module = (await import(url).catch((error: unknown) => {
    throw notLoaded(shown, 'could not be loaded', error);
  })) as Record<string, unknown>;
  const exported = module.default;
  let provider: unknown = exported;
  if (typeof exported === 'function') {
    try {
      provider = await (exported as (argument: unknown) => unknown)(factoryArgument);
    } catch (error) {
      throw notLoaded(shown, 'threw as it made its provider', error);
    }
  }
  if (!isPaymentProvider(provider)) {
    throw new InvalidConfigurationError(`${shown} must export as default ${expected}`);
  }
  return { module, provider };
}

function notLoaded(shown: string, what: string, error: unknown): InvalidConfigurationError {
  const why = error instanceof Error ? error.message : String(error);
  return new InvalidConfigurationError(`--provider ${shown} ${what}: ${why}`, { cause: error });
}
