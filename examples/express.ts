// Express, with `express.json()` mounted for the whole app as most apps have it: the charge
// handler takes the body the parser already read (the fingerprint is over the request's
// content, not its bytes).
//
//   DATABASE_URL=postgres://localhost/shop npx tsx express.ts
//   curl -i localhost:3000/charges -H 'Authorization: Bearer sk_test_shop' \
//     -H 'Content-Type: application/json' -H 'Idempotency-Key: order-4821' \
//     -d '{"customerId":"c_ada","amountMinor":2000,"currency":"EUR"}'
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createChargeEngine, migrate } from 'chargeonce';
import { createChargeHandler } from 'chargeonce/http';
import { createFakeProvider } from 'chargeonce/testing';

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/shop';
await migrate(databaseUrl); // idempotent; many apps run it at deploy time instead

const engine = createChargeEngine({
  pool: databaseUrl, // or your pg.Pool, or a slonik pool
  provider: createFakeProvider(), // your PaymentProvider: createStripeProvider from chargeonce/stripe, say
});

// The merchant comes from your authentication, never from the body; null answers 401.
const merchants = new Map([['Bearer sk_test_shop', 'm_shop']]);

const app = express();
app.use(express.json());
// One handler for the three routes: it tells them apart by the end of the path.
app.post(
  ['/charges', '/charges/:id/refunds', '/charges/:id/capture'],
  createChargeHandler(engine, {
    authenticate: (req) => merchants.get(req.headers.authorization ?? '') ?? null,
  }),
);

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => server.close(() => void engine.close()));
