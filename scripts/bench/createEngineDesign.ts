import * as thisEngine from '../../src/index.js';
import type {
  ChargeEngine,
  ChargeHooks,
  InProgressPolicy,
  TelemetryOptions,
} from '../../src/index.js';
import type { EngineModule } from './baseEngine.js';
import type { BenchProvider } from './createBenchProvider.js';
import type { Design, DesignConnection } from './Design.js';

/**
 * `processCharge` as shipped: default options, no hooks, on a pool of its own made by
 * `createEnginePool`, whatever kind of pool that makes; `lib` is this checkout's chargeonce, or
 * another commit's (`--base`).
 */
export async function createEngineDesign(
  connection: DesignConnection,
  provider: BenchProvider,
  telemetry: TelemetryOptions | false = false,
  inProgress: InProgressPolicy = 'reject',
  lib: EngineModule = thisEngine,
  hooks?: ChargeHooks,
): Promise<Design & { engine: ChargeEngine }> {
  const { createChargeEngine, createEnginePool, IdempotencyKeyInUseError } = lib;
  const { IdempotencyKeyReusedError } = lib;
  const pool = await createEnginePool(connection.url, { maximumPoolSize: connection.poolSize });
  const engine = createChargeEngine({
    pool,
    provider,
    schema: connection.schema,
    telemetry,
    inProgress,
    ...(hooks ? { hooks } : {}),
  });
  return {
    name: 'engine',
    engine,
    end: async () => {
      await engine.close();
      await pool.end();
    },
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
