import { createChargeEngine, type ChargeEngineOptions, type PgPoolLike } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aGate, waitFor } from './charges.js';

/** The hook a holder waits in: a charge's, or a refund's. */
export type HolderHook = 'reserve' | 'complete' | 'refund.reserve' | 'refund.complete';

/**
 * Another process's engine whose `reserve` (or `complete`) hook waits until `release`, holding
 * the keys it charges (or refunds, with `refund.…`): uncommitted (reserve), or their rows locked
 * (complete); a refund's hook holds its charge's row too. `holding(n)` resolves once n of its calls are inside the hook.
 */
export function aKeyHolder(
  pool: PgPoolLike,
  hook: HolderHook,
  options: Partial<ChargeEngineOptions> = {},
) {
  const gate = aGate();
  let holding = 0;
  const wait = async () => {
    holding += 1;
    await gate.wait();
  };
  const engine = createChargeEngine({
    pool,
    provider: createFakeProvider(),
    hooks:
      hook === 'refund.reserve'
        ? { refund: { reserve: wait } }
        : hook === 'refund.complete'
          ? { refund: { complete: wait } }
          : { [hook]: wait },
    ...options,
  });
  return {
    engine,
    release: gate.open,
    holding: (count: number) => waitFor(() => Promise.resolve(holding >= count)),
  };
}
