// A payment worker: charge jobs come from a pg-boss queue in the same PostgreSQL, each carrying
// the idempotency key its operation got when the job was queued. pg-boss delivers a job at
// least once (again after a failure, or after a worker died mid-job); the key turns every
// delivery after the first into a replay, so the customer is charged once.
//
//   DATABASE_URL=postgres://localhost/shop npx tsx payment-worker.ts
//
// and wherever orders are placed:
//
//   await boss.send('charges', { key: randomUUID(), request: { merchantId, customerId, … } });
import PgBoss from 'pg-boss';
import { ChargeOnceError, createChargeEngine, migrate, type ChargeRequest } from 'chargeonce';
import { createFakeProvider } from 'chargeonce/testing';

/** A charge job: the operation's key, made once when the job was queued, and its request. */
export type ChargeJob = { key: string; request: ChargeRequest };

/** Refusals no retry can change: the job ends, and the refusal is logged for a person. */
const FINAL = new Set([
  'invalid_request',
  'idempotency_key_reused',
  'idempotency_key_expired',
  'charge_needs_attention',
]);

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://localhost/shop';
await migrate(databaseUrl);

const engine = createChargeEngine({
  pool: databaseUrl,
  provider: createFakeProvider(), // your PaymentProvider: createStripeProvider from chargeonce/stripe, say
});

const boss = new PgBoss(databaseUrl);
boss.on('error', (error) => console.error('pg-boss:', error));
await boss.start();
// A job that failed (409: another attempt holds the key; 503: provider or database down) runs
// again later, under the same key, with backoff.
await boss.createQueue('charges', {
  name: 'charges',
  retryLimit: 10,
  retryDelay: 5,
  retryBackoff: true,
});

await boss.work<ChargeJob>('charges', async (jobs) => {
  for (const { id, data } of jobs) {
    try {
      const outcome = await engine.processCharge(data.key, data.request);
      const { status, replayed, chargeId } = outcome;
      console.log(JSON.stringify({ job: id, key: data.key, status, replayed, chargeId }));
    } catch (error) {
      if (error instanceof ChargeOnceError && FINAL.has(error.code)) {
        console.log(JSON.stringify({ job: id, key: data.key, refused: error.code }));
        continue;
      }
      throw error; // pg-boss runs the job again
    }
  }
});
console.log('worker ready');

process.once('SIGTERM', () => {
  void boss.stop({ graceful: true, wait: true }).then(() => engine.close());
});
