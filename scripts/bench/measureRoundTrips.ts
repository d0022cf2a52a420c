import { randomUUID } from 'node:crypto';
import { startWireProxy } from '../../test/support/wireProxy.js';
import type { RoundTrips, WireCost } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createDesigns, endDesigns } from './createDesigns.js';
import { runDuring, type DesignName } from './Design.js';

/** Charges per measurement: the count is exact, so a few show that it does not vary. */
const CALLS = 20;

/**
 * Counts round trips and transactions per fresh charge and per replay on the wire, through a
 * counting proxy in front of the server, each design on a pool of one connection (so nothing
 * else shares it). Returns null when the connection is encrypted and the proxy cannot read it.
 */
export async function measureRoundTrips(
  url: string,
  provider: BenchProvider,
  names: readonly DesignName[],
): Promise<RoundTrips | null> {
  const proxy = await startWireProxy(url);
  const designs = await createDesigns(proxy.url, names, 1, provider);
  try {
    const result: RoundTrips = {};
    for (const design of designs) {
      const prefix = `wire-${randomUUID()}`;
      // Connection set-up and the first Parse of a prepared statement are not part of a charge
      // (Parse shares the charge's round trip anyway): one first charge per engine behind it.
      for (let i = 0; i < (design.instances ?? 1); i++) {
        await runDuring(design, () => design.charge(`${prefix}-first-${i}`, benchRequest(i)));
      }
      const keys = Array.from({ length: CALLS }, (_, i) => `${prefix}-${i}`);
      const cost = (kind: 'charged' | 'replayed') => runDuring(design, () => count(kind));
      const count = async (kind: 'charged' | 'replayed'): Promise<WireCost> => {
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
    await endDesigns(designs);
    await proxy.close();
  }
}
