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
import { withApplicationName } from './withApplicationName.js';

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
  // Callers that meet a key in progress wait for its outcome, woken on the winner's commit.
  'engine-wait': async (connection, provider) => ({
    ...(await createEngineDesign(connection, provider, false, { waitMs: 10_000 })),
    name: 'engine-wait',
  }),
  // chargeonce's telemetry bookkeeping alone: telemetry on, a meter that records nothing, no
  // tracer and no SDK. Not in the bench by default: `profileFresh --designs engine,engine-bookkeeping`.
  'engine-bookkeeping': async (connection, provider) => ({
    ...(await createEngineDesign(connection, provider, { meter: idleMeter })),
    name: 'engine-bookkeeping',
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
