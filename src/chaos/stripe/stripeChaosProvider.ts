import { createHash } from 'node:crypto';
import Stripe from 'stripe';
import type { CreateChargeInput, PaymentProvider } from '../../provider/PaymentProvider.js';
import { createStripeProvider } from '../../stripe/createStripeProvider.js';
import { STRIPE_METADATA_KEYS } from '../../stripe/stripeCharge.js';
import type { ProviderLedgerEntry } from '../reconcile.js';
import { EMULATOR_SECRET_KEY } from './startStripeEmulator.js';

/*
 * The provider module of `chargeonce chaos --provider stripe` (see `ChaosProviderModule`),
 * loaded by the harness and by every worker process: the Stripe adapter on the official SDK,
 * talking to the run's stripe-stateful-mock through its fault proxy. Where those listen, and
 * how the run is set, comes in the environment from `startStripeChaos`.
 */

/** The environment variables `startStripeChaos` sets for this module. */
export const STRIPE_CHAOS_ENV = {
  /** Port of the fault proxy in front of the emulator: the adapter's Stripe. */
  apiPort: 'CHARGEONCE_CHAOS_STRIPE_API_PORT',
  /** Port of the emulator itself: the reconciler's view of Stripe's records. */
  ledgerPort: 'CHARGEONCE_CHAOS_STRIPE_LEDGER_PORT',
  /** Share of charges paid with a card Stripe declines. */
  declineRate: 'CHARGEONCE_CHAOS_STRIPE_DECLINE_RATE',
  /** The SDK's own timeout per request (ms). */
  requestTimeoutMs: 'CHARGEONCE_CHAOS_STRIPE_REQUEST_TIMEOUT_MS',
} as const;

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: this module is for \`chargeonce chaos --provider stripe\`, which sets it`,
    );
  }
  return value;
}

function client(port: number): Stripe {
  return new Stripe(EMULATOR_SECRET_KEY, {
    host: '127.0.0.1',
    port,
    protocol: 'http',
    telemetry: false,
  });
}

/**
 * Whether this charge is paid with a declining card: a function of the provider key alone, so
 * every retry sends Stripe the very same parameters.
 */
function declines(providerKey: string, rate: number): boolean {
  const digest = createHash('sha256').update(providerKey).digest();
  return digest.readUInt32BE(0) / 2 ** 32 < rate;
}

export default function stripeChaosProvider(): PaymentProvider {
  const declineRate = Number(env(STRIPE_CHAOS_ENV.declineRate));
  return createStripeProvider({
    stripe: client(Number(env(STRIPE_CHAOS_ENV.apiPort))),
    paymentSource: (input: CreateChargeInput) => ({
      source: declines(input.providerKey, declineRate) ? 'tok_chargeDeclined' : 'tok_visa',
    }),
    // The emulator and PostgreSQL read the same machine's clock (the harness steps only
    // `Date.now` of worker processes, and the emulator runs in the harness's).
    clockSkewMs: 1_000,
    requestTimeoutMs: Number(env(STRIPE_CHAOS_ENV.requestTimeoutMs)),
  });
}

/** Every charge the emulator holds that the adapter made, read straight from it. */
export async function ledger(): Promise<ProviderLedgerEntry[]> {
  const stripe = client(Number(env(STRIPE_CHAOS_ENV.ledgerPort)));
  const entries: ProviderLedgerEntry[] = [];
  for await (const charge of stripe.charges.list({ limit: 100 })) {
    const providerKey = charge.metadata?.[STRIPE_METADATA_KEYS.providerKey];
    if (providerKey === undefined) continue;
    entries.push({
      id: charge.id,
      providerKey,
      status: charge.status === 'succeeded' ? 'succeeded' : 'declined',
      amountMinor: charge.amount,
      currency: charge.currency.toUpperCase(),
    });
  }
  return entries;
}
