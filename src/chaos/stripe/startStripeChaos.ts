import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../packageRoot.js';
import { seededRandom } from '../../provider/seededRandom.js';
import { mixSeed } from '../chaosOperation.js';
import {
  startHttpFaultProxy,
  type FaultChoice,
  type HttpFaultCounts,
} from '../startHttpFaultProxy.js';
import { startStripeEmulator } from './startStripeEmulator.js';
import { STRIPE_CHAOS_ENV } from './stripeChaosProvider.js';

/** Faults the proxy injects between the SDK and the emulator, each a chance per request. */
export type StripeChaosFaults = {
  /** The request never reaches Stripe, and no answer comes: the client times out. */
  hang: number;
  /** A 5xx before the request reaches Stripe (a load balancer's). */
  errorBeforeCharge: number;
  /** Stripe charges, and the client hears a 500 instead of the answer. */
  errorAfterCharge: number;
  /** Stripe charges, and the connection is reset before the answer. */
  resetAfterCharge: number;
  /** A 429 with `Retry-After: 1` before the request reaches Stripe. */
  tooManyRequests: number;
};

/** A running emulator behind its fault proxy, with the environment the provider module reads. */
export type StripeChaos = {
  /** The provider module to hand to the harness (`providerModule`). */
  moduleUrl: string;
  /** Requests through the proxy, per fault. */
  counts: HttpFaultCounts;
  close(): Promise<void>;
};

/** A seed stream apart from the harness's own. */
const PROXY_STREAM = 101;

const API_ERROR = JSON.stringify({
  error: { type: 'api_error', message: 'Injected by the chaos fault proxy.' },
});
const RATE_LIMITED = JSON.stringify({
  error: { type: 'rate_limit_error', message: 'Injected by the chaos fault proxy.' },
});

/**
 * Starts what `chargeonce chaos --provider stripe` runs against: stripe-stateful-mock in this
 * process on a free port, a fault proxy in front of it (also on a free port), and the
 * environment that points the provider module ({@link STRIPE_CHAOS_ENV}), in this process and
 * in the worker processes it forks, at them. Adds GHS, one of the harness's currencies, to the
 * emulator's currency list, which predates it.
 */
export async function startStripeChaos(options: {
  seed: number;
  faults: StripeChaosFaults;
  declineRate: number;
  /** Each answer is held back a time drawn from [0, latencyMs]. */
  latencyMs: number;
  /** The SDK's timeout per request: a hung request's connection is torn down after it. */
  requestTimeoutMs: number;
}): Promise<StripeChaos> {
  const emulator = await startStripeEmulator({ extraCurrencies: ['ghs'] });
  const random = seededRandom(mixSeed(options.seed, PROXY_STREAM));
  const { faults } = options;
  const choose = (): FaultChoice => {
    let draw = random();
    const pick = (rate: number) => {
      draw -= rate;
      return draw < 0;
    };
    if (pick(faults.hang)) return { fault: 'hang' };
    if (pick(faults.errorBeforeCharge)) return { fault: 'respond', status: 503, body: API_ERROR };
    if (pick(faults.errorAfterCharge)) {
      return { fault: 'replaceResponse', status: 500, body: API_ERROR };
    }
    if (pick(faults.resetAfterCharge)) return { fault: 'dropResponse' };
    if (pick(faults.tooManyRequests)) {
      return { fault: 'respond', status: 429, headers: { 'retry-after': '1' }, body: RATE_LIMITED };
    }
    const delayMs = Math.floor(random() * (options.latencyMs + 1));
    return delayMs === 0 ? { fault: 'pass' } : { fault: 'delayResponse', delayMs };
  };
  let proxy;
  try {
    proxy = await startHttpFaultProxy({ targetPort: emulator.port, choose });
  } catch (error) {
    await emulator.close();
    throw error;
  }
  const previous = Object.values(STRIPE_CHAOS_ENV).map((name) => [name, process.env[name]]);
  process.env[STRIPE_CHAOS_ENV.apiPort] = String(proxy.port);
  process.env[STRIPE_CHAOS_ENV.ledgerPort] = String(emulator.port);
  process.env[STRIPE_CHAOS_ENV.declineRate] = String(options.declineRate);
  process.env[STRIPE_CHAOS_ENV.requestTimeoutMs] = String(options.requestTimeoutMs);
  // From the build the provider module is an entry of its own; this module is bundled elsewhere.
  const fromSources = import.meta.url.endsWith('.ts');
  const module = fromSources
    ? new URL('./stripeChaosProvider.ts', import.meta.url)
    : pathToFileURL(join(packageRoot(), 'dist', 'chaos', 'stripe', 'stripeChaosProvider.js'));
  const opened = proxy;
  return {
    moduleUrl: module.href,
    counts: opened.counts,
    close: async () => {
      for (const [name, value] of previous) {
        if (value === undefined) delete process.env[name!];
        else process.env[name!] = value;
      }
      await opened.close();
      await emulator.close();
    },
  };
}
