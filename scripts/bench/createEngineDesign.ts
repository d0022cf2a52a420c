import type { DatabasePool } from 'slonik';
import {
  createChargeEngine,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  type ChargeEngine,
} from '../../src/index.js';
import type { BenchProvider } from './createBenchProvider.js';
import type { Design } from './Design.js';

/** The schema the engine's tables live in during the bench. */
export const ENGINE_SCHEMA = 'chargeonce';

/** `processCharge` as shipped: default options, no hooks. */
export function createEngineDesign(
  pool: DatabasePool,
  provider: BenchProvider,
): Design & { engine: ChargeEngine } {
  const engine = createChargeEngine({ pool, provider, schema: ENGINE_SCHEMA });
  return {
    name: 'engine',
    engine,
    async charge(key, request) {
      try {
        const outcome = await engine.processCharge(key, request);
        return { kind: outcome.replayed ? 'replayed' : 'charged', chargeId: outcome.chargeId };
      } catch (error) {
        if (error instanceof IdempotencyKeyInUseError) return { kind: 'inUse' };
        if (error instanceof IdempotencyKeyReusedError) return { kind: 'reused' };
        throw error;
      }
    },
  };
}
