// Fastify, with chargeonce's plugin: it adds the route and reads the charge body in its own
// scope, so the app's other routes keep Fastify's parsers.
//
//   DATABASE_URL=postgres://localhost/shop npx tsx fastify.ts
import Fastify from 'fastify';
import { createChargeEngine, migrate } from 'chargeonce';
import { chargeOnceFastify } from 'chargeonce/http';
import { createFakeProvider } from 'chargeonce/testing';

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/shop';
await migrate(databaseUrl);

const engine = createChargeEngine({
  pool: databaseUrl,
  provider: createFakeProvider(), // your PaymentProvider: createStripeProvider from chargeonce/stripe, say
});

const merchants = new Map([['Bearer sk_test_shop', 'm_shop']]);

const app = Fastify();
await app.register(chargeOnceFastify, {
  engine,
  path: '/charges',
  authenticate: (request) => merchants.get(request.headers.authorization ?? '') ?? null,
});
app.addHook('onClose', () => engine.close());

const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
console.log(`listening on ${address}`);
process.once('SIGTERM', () => void app.close());
