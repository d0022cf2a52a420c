import { seededRandom } from '../provider/seededRandom.js';
import type { ChargeRequest } from '../request.js';

/** One operation of a chaos run: a key and the request sent, on every retry, under it. */
export type ChaosOperation = { index: number; key: string; request: ChargeRequest };

const MERCHANTS = 8;
const CURRENCIES = ['NGN', 'USD', 'EUR', 'KES', 'GHS'] as const;

/** The merchants of a run: ids of their own, so a run judges its own rows only. */
export function chaosMerchants(runId: string): string[] {
  return Array.from({ length: MERCHANTS }, (_, m) => `chaos-${runId}-m${m}`);
}

/**
 * Operation `index` of a run. A function of the run and the index alone: a restarted worker
 * rebuilds exactly the request its killed predecessor sent, as a real client retrying would.
 */
export function chaosOperation(runId: string, seed: number, index: number): ChaosOperation {
  const random = seededRandom(mixSeed(seed, index));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const merchantId = pick(chaosMerchants(runId));
  const request: ChargeRequest = {
    merchantId,
    customerId: `c_${Math.floor(random() * 1_000)}`,
    amountMinor: 100 + Math.floor(random() * 99_900),
    currency: pick(CURRENCIES),
  };
  // Some requests carry the optional fields, so their canonical form is exercised too.
  if (random() < 0.5) {
    request.description = `Chaos order ${index}`;
    request.metadata = { order: String(index), channel: pick(['web', 'ios', 'android']) };
  }
  return { index, key: `op-${index}`, request };
}

/** A 32-bit seed for a sub-stream (an operation, a worker), so streams do not overlap. */
export function mixSeed(seed: number, ...parts: number[]): number {
  let h = seed >>> 0;
  for (const part of parts) {
    h = Math.imul(h ^ (part >>> 0), 0x9e3779b1) >>> 0;
    h = (h ^ (h >>> 16)) >>> 0;
  }
  return h;
}
