// The files of the consumer project the package tests install chargeonce into: what a user
// writes, from ESM, CommonJS, TypeScript NodeNext (ESM and CJS) and TypeScript CommonJS. They
// import `chargeonce` by name, so they live here as text rather than as files of this
// repository, whose own type check and lint would resolve that name to the repository itself.

/**
 * One run of chargeonce end to end, with the modules it is handed: `esm.mjs` hands it what
 * `import` loads, `cjs.cjs` what `require` loads, so both builds run the very same steps.
 * Prints nothing; returns what a test asserts on.
 */
const scenario = `'use strict';
const http = require('node:http');

async function scenario(libs, { url, flavor }) {
  const { chargeonce, chargeonceHttp, client, testing, pg, slonik } = libs;
  const { sql } = slonik;
  const provider = testing.createFakeProvider();
  const request = (order) => ({
    merchantId: 'm_' + flavor,
    customerId: 'c_1',
    amountMinor: 2000,
    currency: 'EUR',
    metadata: { order },
  });
  const orders = 'orders_' + flavor;
  const report = {};

  // A connection string: migrate, charge, replay.
  report.migrate = await chargeonce.migrate(url);
  {
    const engine = chargeonce.createChargeEngine({ pool: url, provider });
    const first = await engine.processCharge(flavor + '-string', request('1'));
    const again = await engine.processCharge(flavor + '-string', request('1'));
    report.connectionString = {
      status: first.status,
      replayed: again.replayed,
      sameBody: again.body === first.body,
    };
    await engine.close();
  }

  // A node-postgres pool, with a hook written as text and values.
  {
    const pool = new pg.Pool({ connectionString: url });
    await chargeonce.migrate(pool);
    await pool.query('CREATE TABLE ' + orders + ' (id text PRIMARY KEY, state text NOT NULL)');
    const engine = chargeonce.createChargeEngine({
      pool,
      provider,
      hooks: {
        complete: async (tx, ctx) => {
          await tx.query('INSERT INTO ' + orders + ' (id, state) VALUES ($1, $2)', [
            ctx.request.metadata.order,
            ctx.status,
          ]);
        },
      },
    });
    const outcome = await engine.processCharge(flavor + '-pg', request('2'));
    const { rows } = await pool.query('SELECT state FROM ' + orders + " WHERE id = '2'");
    report.pgPool = { status: outcome.status, hookWrote: rows[0] && rows[0].state };
    await engine.close();
    await pool.end();
  }

  // A slonik pool, with a hook written with slonik's sql tag.
  {
    const pool = await slonik.createPool(url);
    await chargeonce.migrate(pool);
    const engine = chargeonce.createChargeEngine({
      pool,
      provider,
      hooks: {
        reserve: async (tx, ctx) => {
          await tx.query(
            sql.unsafe\`INSERT INTO \${sql.identifier([orders])} (id, state)
              VALUES (\${ctx.request.metadata.order}, 'reserved')\`,
          );
        },
      },
    });
    const outcome = await engine.processCharge(flavor + '-slonik', request('3'));
    const state = await pool.oneFirst(
      sql.unsafe\`SELECT state FROM \${sql.identifier([orders])} WHERE id = '3'\`,
    );
    report.slonikPool = { status: outcome.status, hookWrote: state };
    await engine.close();
    await pool.end();
  }

  // The HTTP edge and the client: an error the engine (one entry point) throws is answered
  // by the handler (another) with its own status, from the same build or from the other one.
  {
    const engine = chargeonce.createChargeEngine({ pool: url, provider });
    const handler = chargeonceHttp.createChargeHandler(engine, {
      authenticate: (req) => (req.headers.authorization === 'Bearer t' ? 'm_http_' + flavor : null),
    });
    const server = http.createServer(handler);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const charges = client.createChargeClient({
      baseUrl: 'http://127.0.0.1:' + server.address().port,
      headers: { authorization: 'Bearer t' },
    });
    const body = { customerId: 'c_1', amountMinor: 500, currency: 'EUR' };
    const charged = await charges.charge(body, { key: flavor + '-http' });
    let reused;
    try {
      await charges.charge({ ...body, amountMinor: 600 }, { key: flavor + '-http' });
    } catch (error) {
      reused = {
        isClientError: error instanceof client.ChargeClientError,
        status: error.response && error.response.status,
      };
    }
    report.http = { status: charged.status, reused };
    await new Promise((resolve) => server.close(resolve));
    await engine.close();
  }

  // The chaos harness forks its worker process from the package's files.
  {
    const chaos = await testing.runChaos({
      databaseUrl: url,
      schema: 'chaos_' + flavor,
      charges: 20,
      workers: 1,
      seed: 7,
    });
    report.chaos = { ok: chaos.ok, charges: chaos.charges };
  }
  return report;
}

module.exports = { scenario };
`;

const esm = `import pg from 'pg';
import * as slonik from 'slonik';
import * as chargeonce from 'chargeonce';
import * as chargeonceHttp from 'chargeonce/http';
import * as client from 'chargeonce/client';
import * as testing from 'chargeonce/testing';
import { scenario } from './scenario.cjs';

const libs = { chargeonce, chargeonceHttp, client, testing, pg, slonik };
const report = await scenario(libs, { url: process.env.DATABASE_URL, flavor: 'esm' });
console.log(JSON.stringify(report));
`;

/**
 * Both builds in one process, as an ES module app with a CommonJS plugin has them: the engine
 * from \`import\`, the HTTP edge and the testing kit (its providers' errors) from \`require\`.
 */
const mixed = `import { createRequire } from 'node:module';
import pg from 'pg';
import * as slonik from 'slonik';
import * as chargeonce from 'chargeonce';
import * as client from 'chargeonce/client';
import { scenario } from './scenario.cjs';

const require = createRequire(import.meta.url);
const libs = {
  chargeonce,
  chargeonceHttp: require('chargeonce/http'),
  client,
  testing: require('chargeonce/testing'),
  pg,
  slonik,
};
const report = await scenario(libs, { url: process.env.DATABASE_URL, flavor: 'mixed' });
const required = require('chargeonce');
report.crossCopy = {
  twoCopies: required.IdempotencyKeyReusedError !== chargeonce.IdempotencyKeyReusedError,
  sameKind: new required.IdempotencyKeyReusedError() instanceof chargeonce.IdempotencyKeyReusedError,
  otherKind: new required.IdempotencyKeyReusedError() instanceof chargeonce.InvalidRequestError,
};
console.log(JSON.stringify(report));
`;

const cjs = `'use strict';
const { scenario } = require('./scenario.cjs');

const libs = {
  chargeonce: require('chargeonce'),
  chargeonceHttp: require('chargeonce/http'),
  client: require('chargeonce/client'),
  testing: require('chargeonce/testing'),
  pg: require('pg'),
  slonik: require('slonik'),
};
scenario(libs, { url: process.env.DATABASE_URL, flavor: 'cjs' }).then(
  (report) => console.log(JSON.stringify(report)),
  (error) => {
    console.error(error);
    process.exitCode = 1;
  },
);
`;

/**
 * Drives the Next.js route handler example as Next.js would: imports the module and calls its
 * `POST` with `Request`s. Run with tsx's loader (the example is TypeScript).
 */
const nextRouteDriver = `import { migrate } from 'chargeonce';

await migrate(process.env.DATABASE_URL);
const { POST, runtime } = await import('./examples/next-route.ts');
const charge = (amountMinor) =>
  POST(
    new Request('http://localhost/api/charges', {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_shop',
        'content-type': 'application/json',
        'idempotency-key': 'next-route-1',
      },
      body: JSON.stringify({ customerId: 'c_1', amountMinor, currency: 'EUR' }),
    }),
  );
const first = await charge(2000);
const again = await charge(2000);
const reused = await charge(2500);
console.log(
  JSON.stringify({
    runtime,
    statuses: [first.status, again.status, reused.status],
    replayed: again.headers.get('idempotent-replayed'),
    sameBody: (await first.text()) === (await again.text()),
  }),
);
await globalThis.chargeEngine.close();
`;

/** The public API as a TypeScript user types it; `@ts-expect-error` proves the types are not `any`. */
const typesBody = `
const provider: PaymentProvider = createFakeProvider();
const pgEngine: ChargeEngine = createChargeEngine({
  pool: new pg.Pool({ connectionString: 'postgres://localhost/app' }),
  provider,
  hooks: {
    complete: async (tx: HookTransaction, ctx) => {
      const result: HookQueryResult = await tx.query('UPDATE orders SET state = $1 WHERE id = $2', [
        ctx.status,
        ctx.request.metadata?.order,
      ]);
      void result.rowCount;
    },
  },
});
const handler = createChargeHandler(pgEngine, {
  authenticate: (req) => req.headers.authorization ?? null,
});
const fetchHandler: (request: Request) => Promise<Response> = createFetchHandler({
  engine: pgEngine,
  authenticate: (request) => request.headers.get('authorization'),
});
const stripeProvider: PaymentProvider = createStripeProvider({ stripe: new Stripe('sk_test_x') });
const client = createChargeClient({ baseUrl: 'https://pay.example.com' });

async function use(): Promise<void> {
  // The pool createEnginePool makes is a pg.Pool, used as one.
  const ownPool: EnginePool = await createEnginePool('postgres://localhost/app');
  await ownPool.query('CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)');
  const { rows } = await ownPool.query('SELECT id FROM orders WHERE id = $1', ['1']);
  void rows[0]?.id;
  const slonikPool = await createPool('postgres://localhost/app');
  await migrate(slonikPool);
  const slonikEngine = createChargeEngine({
    pool: slonikPool,
    provider: stripeProvider,
    hooks: { reserve: async (tx) => void (await tx.query(sql.unsafe\`SELECT 1\`)) },
  });
  const outcome: ChargeOutcome = await slonikEngine.processCharge('key', {
    merchantId: 'm_1',
    customerId: 'c_1',
    amountMinor: 2000,
    currency: 'EUR',
  });
  const status: 'succeeded' | 'declined' | 'rejected' | 'cancelled' = outcome.status;
  // @ts-expect-error merchantId is required
  await pgEngine.processCharge('key', { customerId: 'c_1', amountMinor: 1, currency: 'EUR' });
  try {
    const result: ChargeResult = await client.charge({ customerId: 'c', amountMinor: 1, currency: 'EUR' });
    void result.body;
  } catch (error) {
    if (error instanceof ChargeClientError) void error.key;
    if (error instanceof ChargeOnceError) void (error.code satisfies string);
  }
  const fastify = Fastify();
  await fastify.register(chargeOnceFastify, {
    engine: pgEngine,
    authenticate: (request) => String(request.headers.authorization),
  });
  void [handler, fetchHandler, status, reconcile];
}
void use;
`;

const typeImports = `import pg from 'pg';
import { createPool, sql } from 'slonik';
import Stripe from 'stripe';
import Fastify from 'fastify';
import {
  ChargeOnceError,
  createChargeEngine,
  createEnginePool,
  migrate,
  type ChargeEngine,
  type EnginePool,
  type ChargeOutcome,
  type HookQueryResult,
  type HookTransaction,
  type PaymentProvider,
} from 'chargeonce';
import { chargeOnceFastify, createChargeHandler, createFetchHandler } from 'chargeonce/http';
import { ChargeClientError, createChargeClient, type ChargeResult } from 'chargeonce/client';
import { createFakeProvider, reconcile } from 'chargeonce/testing';
import { createStripeProvider } from 'chargeonce/stripe';
`;

const strict = {
  strict: true,
  noEmit: true,
  target: 'ES2022',
  lib: ['ES2023', 'DOM'],
  types: ['node'],
  esModuleInterop: true,
  // Libraries' own declarations are checked too: chargeonce's must compile in a strict project.
  skipLibCheck: false,
};

/** The consumer project's files, by path. */
export const CONSUMER_FILES: Record<string, string> = {
  'scenario.cjs': scenario,
  'esm.mjs': esm,
  'cjs.cjs': cjs,
  'mixed.mjs': mixed,
  'next-route-driver.mjs': nextRouteDriver,
  // TypeScript NodeNext: an ES module (`.ts` in a `"type": "module"` project) and a CommonJS
  // one (`.cts`), which resolve chargeonce through `import` and `require` respectively.
  'types-esm.ts': typeImports + typesBody,
  'types-cjs.cts': typeImports + typesBody,
  'tsconfig.json': JSON.stringify({
    compilerOptions: { ...strict, module: 'NodeNext', moduleResolution: 'NodeNext' },
    include: ['types-esm.ts', 'types-cjs.cts', 'examples/*.ts'],
  }),
  // TypeScript CommonJS as older projects have it: `module: commonjs`, whose default module
  // resolution (node10) ignores `exports`.
  'ts-commonjs/index.ts': typeImports + typesBody,
  'ts-commonjs/tsconfig.json': JSON.stringify({
    compilerOptions: { ...strict, module: 'CommonJS' },
    files: ['index.ts'],
  }),
};
