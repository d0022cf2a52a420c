import { createChargeEngine, type ChargeEngineOptions, type PgPoolLike } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, waitFor } from './charges.js';

/**
 * Another process's engine whose `reserve` (or `complete`) hook waits until `release`, holding
 * the keys it charges: uncommitted (reserve), or their rows locked (complete). `holding(n)`
 * resolves once n of its calls are inside the hook.
 */
export function aKeyHolder(
  pool: PgPoolLike,
  hook: 'reserve' | 'complete',
  options: Partial<ChargeEngineOptions> = {},
) {
  const gate = aGate();
  let holding = 0;
  const engine = createChargeEngine({
    pool,
    provider: createFakeProvider(),
    hooks: {
      [hook]: async () => {
        holding += 1;
        await gate.wait();
      },
    },
    ...options,
  });
  return {
    engine,
    release: gate.open,
    holding: (count: number) => waitFor(() => Promise.resolve(holding >= count)),
  };
}
