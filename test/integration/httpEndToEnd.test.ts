import type { IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChargeClient, type ChargeResult } from '../../src/client/index.js';
import { createChargeEngine, type PaymentProvider } from '../../src/index.js';
import { createChargeHandler } from '../../src/http/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { sleep } from '../../src/client/sleep.js';
import { readCharges } from '../support/charges.js';
import { seeded, startHttpFaultProxy, type FaultChoice } from '../support/httpFaultProxy.js';
import { listen } from '../support/httpServer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';

const OPERATIONS = 500;
/** Moderate: the machine is small and shared; faults, not load, are what this test is about. */
const CONCURRENCY = 16;
/**
 * Well above the server's latency even on a loaded machine: a client timeout below it turns
 * every attempt into a timeout and every retry into more load (a retry storm), which is a
 * tuning lesson, not what this test is about. Abandoned attempts come from the long delays.
 */
const ATTEMPT_TIMEOUT_MS = 2_000;
const MERCHANT = 'm_e2e';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ maximumPoolSize: 20 });
});
afterAll(async () => {
  await db.drop();
});

describe('client → fault proxy → handler → engine → provider', () => {
  it(`${OPERATIONS} operations: exactly one provider charge each, and each client gets its own outcome`, async () => {
    const random = seeded(20_260_101);
    // No dedupe at the provider: a second createCharge for an operation is a second real charge.
    const fake = createFakeProvider({ dedupe: false });
    let providerFaults = 0;
    const provider: PaymentProvider = {
      createCharge(input, opts) {
        if (input.customerId.endsWith('-declines')) fake.failNext('decline');
        else if (random() < 0.08) {
          providerFaults += 1;
          fake.failNext(random() < 0.5 ? 'failBeforeCharge' : 'failAfterCharge');
        }
        return fake.createCharge(input, opts);
      },
      findCharge: (providerKey, opts) => fake.findCharge(providerKey, opts),
    };
    const engine = createChargeEngine({ pool: db.pgPool, provider });
    const handler = createChargeHandler(engine, {
      authenticate: (req: IncomingMessage) =>
        req.headers.authorization === 'Bearer tok_e2e' ? MERCHANT : null,
      onError: () => {},
    });
    const server = await listen((req, res) => void handler(req, res));
    const proxy = await startHttpFaultProxy({
      targetPort: server.port,
      choose: (): FaultChoice => {
        const draw = random();
        // Most delays make an answer late; one in four outlasts the attempt, which the client
        // then abandons while the server carries on.
        const long = random() < 0.25;
        const delayMs = long ? ATTEMPT_TIMEOUT_MS + 200 : Math.floor(random() * 200);
        if (draw < 0.06) return { fault: 'resetRequest' };
        if (draw < 0.12) return { fault: 'dropResponse' };
        if (draw < 0.16) return { fault: 'delayRequest', delayMs };
        if (draw < 0.2) return { fault: 'delayResponse', delayMs };
        return { fault: 'pass' };
      },
    });
    let timeouts = 0;
    const client = createChargeClient({
      baseUrl: proxy.url,
      fetch: (input, init) =>
        globalThis.fetch(input, init).catch((error: unknown) => {
          if ((init?.signal?.reason as Error | undefined)?.name === 'TimeoutError') timeouts += 1;
          throw error;
        }),
      headers: { authorization: 'Bearer tok_e2e' },
      attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
      retries: 30,
      // Backoff and Retry-After are honoured as asked, on a clock that runs 50 times faster:
      // the schedule is the real one, the test just does not wait it out.
      sleep: (ms, signal) => sleep(ms / 50, signal),
    });

    const results: ChargeResult[] = new Array<ChargeResult>(OPERATIONS);
    const failures: unknown[] = [];
    let next = 0;
    const worker = async () => {
      while (next < OPERATIONS) {
        const op = next++;
        await client
          .charge({
            customerId: `c_${op}${op % 10 === 7 ? '-declines' : ''}`,
            amountMinor: 100 + op,
            currency: 'NGN',
            metadata: { op: String(op) },
          })
          .then((result) => (results[op] = result))
          .catch((error: unknown) => failures.push(error));
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      await proxy.close();
      await server.close();
    }

    expect(failures).toEqual([]);
    // Exactly one real charge per operation.
    const ledger = fake.ledger();
    expect(ledger).toHaveLength(OPERATIONS);
    const byCustomer = new Map(ledger.map((entry) => [entry.customerId, entry]));
    expect(byCustomer.size).toBe(OPERATIONS);
    expect(new Set(ledger.map((entry) => entry.providerKey)).size).toBe(OPERATIONS);
    // Each client got the outcome of its own operation, and of no other.
    for (let op = 0; op < OPERATIONS; op++) {
      const result = results[op];
      const declines = op % 10 === 7;
      const customerId = `c_${op}${declines ? '-declines' : ''}`;
      const body = JSON.parse(result?.body ?? '{}') as Record<string, unknown>;
      expect(result?.status).toBe(declines ? 402 : 201);
      expect(body).toMatchObject({
        status: declines ? 'declined' : 'succeeded',
        merchantId: MERCHANT,
        customerId,
        amountMinor: 100 + op,
        metadata: { op: String(op) },
        providerChargeId: byCustomer.get(customerId)?.id,
      });
    }
    expect(new Set(results.map((r) => r.key)).size).toBe(OPERATIONS);
    const charges = await readCharges(db.pool, db.tables, MERCHANT);
    expect(charges).toHaveLength(OPERATIONS);
    // The faults did happen, and were survived by retrying: the test proves something.
    for (const count of Object.values(proxy.counts)) expect(count).toBeGreaterThan(0);
    expect(providerFaults).toBeGreaterThan(0);
    expect(timeouts).toBeGreaterThan(0);
    expect(results.some((r) => r.replayed)).toBe(true);
    expect(results.reduce((sum, r) => sum + r.attempts, 0)).toBeGreaterThan(OPERATIONS);
  });
});
