import { baseEngine } from './baseEngine.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createEngineDesign } from './createEngineDesign.js';
import { createFloorDesign } from './createFloorDesign.js';
import { idleMeter } from './idleMeter.js';
import { createOtelEngineDesign } from './createOtelEngineDesign.js';
import { createNaiveDesign } from './createNaiveDesign.js';
import { createSlonikFloorDesign } from './createSlonikFloorDesign.js';
import { createSlonikNaiveDesign } from './createSlonikNaiveDesign.js';
import { DESIGN_SCHEMAS, type Design, type DesignConnection, type DesignName } from './Design.js';
import { SAMPLED_SHARE } from './headSampler.js';
import { spreadDesign } from './spreadDesign.js';
import { withApplicationName } from './withApplicationName.js';

/** Engines of `engine-wait`, each with its own pool and its own listening connection. */
const WAIT_INSTANCES = 4;

const FACTORIES: Record<
  DesignName,
  (connection: DesignConnection, provider: BenchProvider) => Promise<Design>
> = {
  engine: (connection, provider) => createEngineDesign(connection, provider),
  // The engine of the commit named by `--base`, run as shipped then.
  'engine-base': async (connection, provider) => ({
    ...(await createEngineDesign(connection, provider, false, 'reject', baseEngine().module)),
    name: 'engine-base',
  }),
  'engine-otel': createOtelEngineDesign,
  // The same with one trace in ten recorded, metrics on every call: tracing as a busy service
  // runs it. Not in the bench by default: `--designs engine,engine-otel,engine-otel-sampled`.
  'engine-otel-sampled': (connection, provider) =>
    createOtelEngineDesign(connection, provider, SAMPLED_SHARE),
  // Callers that meet a key in progress wait for its outcome, woken on the winner's commit. In
  // several engines, as several processes would be, the design's connections shared among them:
  // in one engine, a key's callers would all join its one attempt and never wait on a commit.
  'engine-wait': async (connection, provider) => {
    const poolSize = Math.max(2, Math.ceil(connection.poolSize / WAIT_INSTANCES));
    const instances: Design[] = [];
    try {
      for (let i = 0; i < WAIT_INSTANCES; i++) {
        instances.push(
          await createEngineDesign({ ...connection, poolSize }, provider, false, {
            waitMs: 10_000,
          }),
        );
      }
    } catch (error) {
      await endDesigns(instances);
      throw error;
    }
    return spreadDesign('engine-wait', instances);
  },
  // chargeonce's telemetry bookkeeping alone: telemetry on, a meter that records nothing, no
  // tracer and no SDK. Not in the bench by default: `profileFresh --designs engine,engine-bookkeeping`.
  'engine-bookkeeping': async (connection, provider) => ({
    ...(await createEngineDesign(connection, provider, { meter: idleMeter })),
    name: 'engine-bookkeeping',
  }),
  // A `reserve` hook (one statement of the caller's in the claim's transaction) on every call:
  // the claim runs through slonik in a transaction of its own, the completion as the engine's.
  // Not in the bench by default: `--designs engine,engine-hooks`.
  'engine-hooks': async (connection, provider) => ({
    ...(await createEngineDesign(connection, provider, false, 'reject', undefined, {
      reserve: async (tx) => void (await tx.query('SELECT 1')),
    })),
    name: 'engine-hooks',
  }),
  floor: createFloorDesign,
  'floor-slonik': createSlonikFloorDesign,
  naive: createNaiveDesign,
  'naive-slonik': createSlonikNaiveDesign,
};

/** The `application_name` a design's connections carry: how its server processes are found. */
export function applicationNameOf(name: DesignName): string {
  return `chargeonce-bench-${name}`;
}

/**
 * Each named design on its own pool of `poolSize` connections to `url`, so that no design waits
 * for another's connections and each one's server processes can be measured apart.
 */
export async function createDesigns(
  url: string,
  names: readonly DesignName[],
  poolSize: number,
  provider: BenchProvider,
): Promise<Design[]> {
  const designs: Design[] = [];
  try {
    for (const name of names) {
      const connection = {
        url: withApplicationName(url, applicationNameOf(name)),
        poolSize,
        schema: DESIGN_SCHEMAS[name],
      };
      designs.push(await FACTORIES[name](connection, provider));
    }
  } catch (error) {
    await endDesigns(designs);
    throw error;
  }
  return designs;
}

/** Ends every design's pool, even when one of them fails to end. */
export async function endDesigns(designs: readonly Design[]): Promise<void> {
  await Promise.allSettled(designs.map((d) => d.end()));
}
