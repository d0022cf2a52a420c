import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { createEnginePool } from '../../src/index.js';
import { startWireProxy } from '../../test/support/wireProxy.js';
import type { RoundTrips, WireCost } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { BenchProvider } from './createBenchProvider.js';
import type { Design } from './Design.js';

/** Charges per measurement: the count is exact, so a few show that it does not vary. */
const CALLS = 20;

/**
 * Counts round trips and transactions per fresh charge and per replay on the wire, through a
 * counting proxy in front of the server and a pool of one connection (so nothing else shares it).
 * Returns null when the connection is encrypted and the proxy cannot read it.
 */
export async function measureRoundTrips(
  url: string,
  provider: BenchProvider,
  makeDesigns: (pool: Awaited<ReturnType<typeof createEnginePool>>) => Design[],
): Promise<RoundTrips | null> {
  const proxy = await startWireProxy(url);
  const pool = await createEnginePool(proxy.url, { maximumPoolSize: 1 });
  try {
    // Connection set-up is not part of a charge.
    await pool.query(sql.unsafe`SELECT 1`);
    const result: RoundTrips = {};
    for (const design of makeDesigns(pool)) {
      const prefix = `wire-${randomUUID()}`;
      const keys = Array.from({ length: CALLS }, (_, i) => `${prefix}-${i}`);
      const cost = async (kind: 'charged' | 'replayed'): Promise<WireCost> => {
        proxy.reset();
        for (const [i, key] of keys.entries()) {
          const outcome = await design.charge(key, benchRequest(i));
          if (outcome.kind !== kind) throw new Error(`${design.name}: expected ${kind}`);
        }
        const stats = proxy.stats();
        return { roundTrips: stats.roundTrips / CALLS, transactions: stats.endedIdle / CALLS };
      };
      const fresh = await cost('charged');
      const replay = await cost('replayed');
      if (fresh.roundTrips === 0) return null;
      result[design.name] = { fresh, replay };
    }
    return result;
  } finally {
    await pool.end();
    await proxy.close();
  }
}
