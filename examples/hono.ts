// Hono on Node (@hono/node-server), with chargeonce's Fetch-API handler: hand it the raw
// `Request`, its body unread.
//
//   DATABASE_URL=postgres://localhost/shop npx tsx hono.ts
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createChargeEngine, migrate } from 'chargeonce';
import { createFetchHandler } from 'chargeonce/http';
import { createFakeProvider } from 'chargeonce/testing';

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/shop';
await migrate(databaseUrl);

const engine = createChargeEngine({
  pool: databaseUrl,
  provider: createFakeProvider(), // your PaymentProvider: createStripeProvider from chargeonce/stripe, say
});

const merchants = new Map([['Bearer sk_test_shop', 'm_shop']]);
const charge = createFetchHandler({
  engine,
  authenticate: (request) => merchants.get(request.headers.get('authorization') ?? '') ?? null,
});

const app = new Hono();
// One handler for the three routes: it tells them apart by the end of the path.
app.post('/charges', (c) => charge(c.req.raw));
app.post('/charges/:id/refunds', (c) => charge(c.req.raw));
app.post('/charges/:id/capture', (c) => charge(c.req.raw));

const server = serve(
  { fetch: app.fetch, port: Number(process.env.PORT ?? 3000), hostname: '127.0.0.1' },
  (info) => console.log(`listening on http://127.0.0.1:${info.port}`),
);
process.once('SIGTERM', () => server.close(() => void engine.close()));
