import { randomUUID } from 'node:crypto';
import type { ChargeEngine } from '../../src/index.js';
import { startWireProxy } from '../../test/support/wireProxy.js';
import { createChargeEngine, createEnginePool } from '../../src/index.js';
import type { Measurement, WireCost } from './BenchResults.js';
import { benchRequest } from './benchRequest.js';
import type { BenchProvider } from './createBenchProvider.js';
import { measurementOf, runConcurrently } from './runConcurrently.js';

/** Fresh charges and fresh refunds of them, measured one right after the other. */
export type RefundPair = { charge: Measurement; refund: Measurement };

/**
 * `calls` fresh charges, then one partial refund of each, both timed at `concurrency`: a refund
 * runs the charge's machinery with a reservation against the charge's row, so the two should
 * cost about the same. Each refund is of another charge (refunds of one charge wait on its row
 * lock, one at a time, by design).
 */
export async function runRefundPair(
  engine: ChargeEngine,
  provider: BenchProvider,
  options: { calls: number; concurrency: number },
): Promise<RefundPair> {
  const prefix = `refund-${randomUUID()}`;
  const charges = Array.from({ length: options.calls }, (_, i) => ({
    key: `${prefix}-c${i}`,
    request: benchRequest(i),
  }));
  const chargeIds: string[] = [];
  const charged = await runConcurrently(charges, options.concurrency, async (item, i) => {
    const outcome = await engine.processCharge(item.key, item.request);
    if (outcome.replayed) throw new Error('refund bench: a fresh charge was a replay');
    chargeIds[i] = outcome.chargeId;
  });
  const before = provider.counts().refunds;
  const refunds = chargeIds.map((chargeId, i) => ({
    key: `${prefix}-r${i}`,
    request: {
      merchantId: charges[i]!.request.merchantId,
      chargeId,
      amountMinor: Math.ceil(charges[i]!.request.amountMinor / 2),
    },
  }));
  const refunded = await runConcurrently(refunds, options.concurrency, async (item) => {
    const outcome = await engine.processRefund(item.key, item.request);
    if (outcome.status !== 'succeeded') {
      throw new Error(`refund bench: a refund answered ${outcome.status}`);
    }
  });
  const made = provider.counts().refunds - before;
  if (made !== options.calls) {
    throw new Error(`refund bench: ${options.calls} refunds made ${made} provider refunds`);
  }
  return {
    charge: measurementOf(options.calls, charged),
    refund: measurementOf(options.calls, refunded),
  };
}

/** Refunds per measurement of the wire: the count is exact, a few show that it does not vary. */
const WIRE_CALLS = 10;

/**
 * Round trips and transactions per fresh refund and per replay, counted on the wire through a
 * counting proxy, the engine on a pool of one connection; null when the proxy cannot read it.
 */
export async function measureRefundRoundTrips(
  url: string,
  schema: string,
  provider: BenchProvider,
): Promise<{ fresh: WireCost; replay: WireCost } | null> {
  const proxy = await startWireProxy(url);
  const pool = await createEnginePool(proxy.url, { maximumPoolSize: 1 });
  const engine = createChargeEngine({ pool, provider, schema, telemetry: false });
  try {
    const prefix = `wire-refund-${randomUUID()}`;
    const refundOf = async (i: number) => {
      const request = benchRequest(i);
      const charge = await engine.processCharge(`${prefix}-c${i}`, request);
      return { merchantId: request.merchantId, chargeId: charge.chargeId, amountMinor: 1 };
    };
    // The first refund prepares the refund's statements: not part of a refund.
    await engine.processRefund(`${prefix}-first`, await refundOf(WIRE_CALLS));
    const requests = await Promise.all(Array.from({ length: WIRE_CALLS }, (_, i) => refundOf(i)));
    const cost = async (replayed: boolean): Promise<WireCost> => {
      proxy.reset();
      for (const [i, request] of requests.entries()) {
        const outcome = await engine.processRefund(`${prefix}-r${i}`, request);
        if (outcome.replayed !== replayed) throw new Error('refund bench: unexpected replay');
      }
      const stats = proxy.stats();
      return {
        roundTrips: stats.roundTrips / WIRE_CALLS,
        transactions: stats.endedIdle / WIRE_CALLS,
      };
    };
    const fresh = await cost(false);
    const replay = await cost(true);
    return fresh.roundTrips === 0 ? null : { fresh, replay };
  } finally {
    await engine.close();
    await pool.end();
    await proxy.close();
  }
}
