// A Next.js route handler (App Router), as `app/api/charges/route.ts`: a route handler is a
// Fetch-API handler. It runs on the Node.js runtime; the engine needs PostgreSQL, which the edge
// runtime cannot reach. Run `migrate` once at deploy time, not per request.
import { createChargeEngine, type ChargeEngine } from 'chargeonce';
import { createFetchHandler } from 'chargeonce/http';
import { createFakeProvider } from 'chargeonce/testing';

export const runtime = 'nodejs';

// One engine (and pool) per process: Next.js may evaluate this module more than once in
// development, so it is kept on globalThis.
const shared = globalThis as { chargeEngine?: ChargeEngine };
const engine = (shared.chargeEngine ??= createChargeEngine({
  pool: process.env.DATABASE_URL ?? 'postgres://localhost/shop',
  provider: createFakeProvider(), // your PaymentProvider: createStripeProvider from chargeonce/stripe, say
}));

const merchants = new Map([['Bearer sk_test_shop', 'm_shop']]);

export const POST = createFetchHandler({
  engine,
  authenticate: (request) => merchants.get(request.headers.get('authorization') ?? '') ?? null,
});
