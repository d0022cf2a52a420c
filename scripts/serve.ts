// A payment API to try by hand: POST /charges through chargeonce's HTTP edge, on embedded
// PostgreSQL (or DATABASE_URL), charging a fake payment provider that runs over real HTTP.
//
//   npm run serve                                  # port 3000, or PORT
//   PROVIDER_FAULTS=decline=0.3,errorAfterCharge=0.2 npm run serve
//
// PROVIDER_FAULTS sets the fake provider's fault rates (see FAKE_SERVER_FAULTS), so declines
// and 503s can be tried by hand too. The sweeper and reaper run in the process, as in a
// production service, so keys left unfinished get finished. Ctrl-C stops everything; a second
// Ctrl-C forces it.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import {
  ChargeOnceError,
  createChargeEngine,
  createEnginePool,
  migrate,
  type SweepResult,
} from '../src/index.js';
import { createChargeHandler } from '../src/http/index.js';
import {
  createHttpProvider,
  FAKE_SERVER_FAULTS,
  startFakeProviderServer,
  type FakeServerRates,
} from '../src/testing/index.js';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { startDatabase } from './support/database.js';

/**
 * Demo credentials: an API key per merchant, as a real service would look up in its own store.
 * The merchant always comes from here, never from the request body.
 */
const API_KEYS: Readonly<Record<string, string>> = {
  sk_test_shop: 'm_shop',
  sk_test_cafe: 'm_cafe',
};

function authenticate(req: IncomingMessage): string | null {
  const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
  return (match?.[1] !== undefined && API_KEYS[match[1]]) || null;
}

function providerRates(text: string | undefined): Partial<FakeServerRates> {
  const rates: Partial<FakeServerRates> = {};
  for (const pair of (text ?? '').split(',').filter(Boolean)) {
    const [name, value] = pair.split('=');
    const fault = FAKE_SERVER_FAULTS.find((f) => f === name?.trim());
    if (!fault) {
      throw new Error(
        `PROVIDER_FAULTS: unknown fault ${String(name)}; known: ${FAKE_SERVER_FAULTS.join(', ')}`,
      );
    }
    rates[fault] = Number(value);
  }
  return rates;
}

/** Pause between recovery passes (jittered ±25% by the loop). */
const RECOVERY_INTERVAL_MS = 10_000;
/** How long after its lease ended an unfinished key is the sweeper's (the engine's default). */
const SWEEP_GRACE_MS = 30_000;

/** What a recovery pass did, in a line, or null when it did nothing. */
function describePass(swept: SweepResult, reaped: number): string | null {
  if (swept.examined === 0 && reaped === 0) return null;
  const done = Object.entries(swept)
    .filter(([kind, count]) => kind !== 'examined' && count > 0)
    .map(([kind, count]) => `${count} ${kind}`);
  return `recovery: swept ${swept.examined} key(s)${done.length > 0 ? ` (${done.join(', ')})` : ''}, reaped ${reaped}`;
}

const port = Number(process.env.PORT ?? 3000);
const database = await startDatabase();
const pool = await createEnginePool(database.url);
await migrate(pool, { schema: 'chargeonce' });
const providerServer = await startFakeProviderServer({
  rates: providerRates(process.env.PROVIDER_FAULTS),
});
// Prometheus scrapes GET /metrics: OpenTelemetry's exporter serves the engine's instruments.
const prometheus = new PrometheusExporter({ preventServerStart: true });
const meterProvider = new MeterProvider({ readers: [prometheus] });
const engine = createChargeEngine({
  pool,
  provider: createHttpProvider({ baseUrl: providerServer.url }),
  sweepGraceMs: SWEEP_GRACE_MS,
  telemetry: { meter: meterProvider.getMeter('chargeonce') },
});
const chargeHandler = createChargeHandler(engine, {
  authenticate,
  // One line for the 5xx chargeonce meant (a provider or database out of reach, a parked key):
  // with PROVIDER_FAULTS on they are many. It names the request and its key, for `inspect`.
  // Anything else keeps its stack.
  onError: (error, req) => {
    const key = req.headers['idempotency-key'];
    const request = `${req.method ?? '?'} ${req.url ?? '?'}${typeof key === 'string' ? ` key ${key}` : ''}`;
    if (error instanceof ChargeOnceError) {
      console.error(`answered ${error.httpStatus} ${error.code} to ${request}: ${error.message}`);
    } else console.error(`the charge handler answered 500 to ${request}:`, error);
  },
});

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  // The handler routes what is below a charge itself: refunds, captures, and a 404 for the rest.
  if (path === '/charges' || path.startsWith('/charges/')) {
    void chargeHandler(req, res);
    return;
  }
  if (path === '/metrics' && req.method === 'GET') {
    prometheus.getMetricsRequestHandler(req, res);
    return;
  }
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ error: { code: 'not_found', message: 'Try POST /charges.' } }));
});
await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', () => resolve());
});

// The sweeper and reaper, on this engine: their counts are on the same /metrics.
const recoveryStop = new AbortController();
const recovery = engine.startRecovery({
  intervalMs: RECOVERY_INTERVAL_MS,
  signal: recoveryStop.signal,
  onError: (error) => console.error('recovery pass failed (the next one retries):', error),
  onPass: ({ swept, reaped }) => {
    const line = describePass(swept, reaped);
    if (line) console.log(line);
  },
});

// PORT=0 picks a free port: print the one the server got.
const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const key = `order-${randomUUID()}`;
const post = (path: string, body: string, extra = '') =>
  `curl -i ${api}${path} -H 'Authorization: Bearer sk_test_shop' \\\n` +
  `    -H 'Content-Type: application/json' ${extra}-d '${body}'`;
const charge = (body: string, extra = '') => post('/charges', body, extra);
const order = '{"customerId":"c_ada","amountMinor":2000,"currency":"NGN"}';
// The embedded cluster's URL is a throwaway local one: printed, so that the admin commands can
// reach the keys this server writes. A DATABASE_URL may hold a password: named, not printed.
const databaseUrl = database.source === 'embedded' ? `'${database.url}'` : '"$DATABASE_URL"';
console.log(`chargeonce payment API on ${api}
  PostgreSQL: ${database.source}    fake provider: ${providerServer.url} (seed ${providerServer.seed})

Charge (run it twice: the second answer is the same bytes, with Idempotent-Replayed: true):
  ${charge(order, `-H 'Idempotency-Key: ${key}' `)}
Same key, different amount (422):
  ${charge(order.replace('2000', '2500'), `-H 'Idempotency-Key: ${key}' `)}
No key (400), or no Authorization header (401):
  ${charge(order)}
Refund part of it (set CHARGE_ID to the "id" of the charge's answer; run it twice: one refund):
  ${post('/charges/$CHARGE_ID/refunds', '{"amountMinor":500,"reason":"requested_by_customer"}', `-H 'Idempotency-Key: refund-${randomUUID()}' `)}
Authorize only, then capture it (set AUTH_ID to the "id" of the authorization's answer; no body needed, so -X POST):
  ${charge(order.replace('}', ',"capture":false}'), `-H 'Idempotency-Key: auth-${randomUUID()}' `)}
  curl -i -X POST ${api}/charges/$AUTH_ID/capture -H 'Authorization: Bearer sk_test_shop' -H 'Idempotency-Key: capture-${randomUUID()}'
What the provider really charged:
  curl ${providerServer.url}/v1/ledger
chargeonce's metrics, as Prometheus scrapes them:
  curl ${api}/metrics
The keys this server wrote, and a parked one's details (inspect, resolve, requeue: npm run chargeonce -- --help):
  npm run chargeonce -- list --database-url ${databaseUrl}
  npm run chargeonce -- list --database-url ${databaseUrl} --point failed

Recovery: the sweeper and reaper run every ${RECOVERY_INTERVAL_MS / 1000} s (±25%); the sweeper finishes keys whose lease ended over ${SWEEP_GRACE_MS / 1000} s ago.
Ctrl-C to stop.`);

let stopping: Promise<void> | undefined;
const stop = (signal: NodeJS.Signals) =>
  (stopping ??= (async () => {
    console.log(`\n${signal}: stopping`);
    // Stop taking requests; an answer being written finishes, idle keep-alives are closed.
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    try {
      // The pass under way finishes (it may be asking the provider), then the loop ends.
      recoveryStop.abort();
      await recovery;
      await providerServer.close();
      await meterProvider.shutdown();
      await engine.close();
      await pool.end();
    } finally {
      // Whatever failed above, the embedded cluster goes.
      await database.stop();
    }
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // `once`: a second signal finds no listener and ends the process the default way.
  process.once(signal, () => {
    stop(signal).catch((error: unknown) => {
      console.error('could not stop cleanly', error);
      process.exitCode = 1;
    });
  });
}
