// The chargeonce story in one run: a charge, a lost response and its retry, a double tap, a
// reused key, a decline. Prints what each step returned and what the provider saw, then runs a
// short chaos experiment (worker processes killed, crashes, provider faults) and reconciles it,
// and ends with a short summary of what the engine's OpenTelemetry instruments counted.
// Exits non-zero if any provider key was charged more than once, or the chaos run found anything.
import { randomUUID } from 'node:crypto';
import {
  ChargeOnceError,
  createChargeEngine,
  createEnginePool,
  migrate,
  type ChargeOutcome,
  type ChargeRequest,
  type RefundOutcome,
} from '../src/index.js';
import { createFakeProvider } from '../src/testing/index.js';
import { runChaos } from '../src/chaos/runChaos.js';
import { createProgressBar } from '../src/cli/createProgressBar.js';
import { renderChaosReport } from '../src/cli/renderChaosReport.js';
import { startDatabase } from './support/database.js';
import { createMetricsSummary } from './support/metricsSummary.js';

const database = await startDatabase();
const pool = await createEnginePool(database.url);
try {
  await migrate(pool, { schema: 'chargeonce' });
  // dedupe: false — the provider forgets nothing and forgives nothing: a second createCharge
  // under the same key would be a second real charge, and the final check would catch it.
  const provider = createFakeProvider({ dedupe: false });
  const metrics = createMetricsSummary();
  const engine = createChargeEngine({
    pool,
    provider,
    inProgress: { waitMs: 5_000 },
    telemetry: { meter: metrics.meter },
  });
  const order = (amountMinor: number): ChargeRequest => ({
    merchantId: 'm_shop',
    customerId: 'c_ada',
    amountMinor,
    currency: 'NGN',
    description: 'Order 4821',
    metadata: { order: '4821' },
  });
  const attempt = async (label: string, key: string, request: ChargeRequest) => {
    try {
      show(label, await engine.processCharge(key, request));
    } catch (error) {
      if (!(error instanceof ChargeOnceError)) throw error;
      console.log(`  ${label.padEnd(34)} ${error.httpStatus} ${error.code}`);
    }
  };

  console.log(`\nchargeonce demo on ${database.source} PostgreSQL\n`);

  console.log('1. A charge');
  const first = `order-${randomUUID()}`;
  const firstOutcome = await engine.processCharge(first, order(2000));
  show('first attempt', firstOutcome);
  const firstCharge = firstOutcome.chargeId;

  console.log('2. The provider charges, then the response is lost');
  const lost = `order-${randomUUID()}`;
  provider.failNext('failAfterCharge');
  await attempt('first attempt', lost, order(3500));
  await attempt('retry, same key: adopts it', lost, order(3500));

  console.log('3. A double tap: two requests at the same instant');
  const tap = `order-${randomUUID()}`;
  const [left, right] = await Promise.all([
    engine.processCharge(tap, order(1200)),
    engine.processCharge(tap, order(1200)),
  ]);
  show('tap one', left);
  show('tap two', right);

  console.log('4. The same key reused for a different amount');
  await attempt('retry with amount 9999', first, order(9999));

  console.log('5. A decline, and its retry');
  const declined = `order-${randomUUID()}`;
  provider.failNext('decline');
  await attempt('first attempt', declined, order(500));
  await attempt('retry, same key', declined, order(500));

  console.log('6. Refunds of the first charge (2000): two of 1200 at once, only one fits');
  const refund = (key: string, amountMinor: number) =>
    engine.processRefund(key, { merchantId: 'm_shop', chargeId: firstCharge, amountMinor });
  const [a, b, c] = ['a', 'b', 'c'].map((name) => `refund-${name}-${randomUUID()}`) as [
    string,
    string,
    string,
  ];
  const refunds = await Promise.all([refund(a, 1200), refund(b, 1200)]);
  for (const [i, r] of refunds.entries()) showRefund(`refund ${i + 1} of 1200`, r);
  showRefund('refund 1 again, same key', await refund(a, 1200));
  showRefund('then the rest, 800', await refund(c, 800));

  console.log('\nWhat the provider saw');
  console.log(`  createCharge calls: ${provider.calls.createCharge}`);
  console.log(`  findCharge calls:   ${provider.calls.findCharge}`);
  const refunded = provider.refundLedger().reduce((sum, r) => sum + r.amountMinor, 0);
  console.log(`  refunds:            ${provider.refundLedger().length}, ${refunded} of 2000`);
  const perKey = new Map<string, number>();
  for (const entry of provider.ledger()) {
    perKey.set(entry.providerKey, (perKey.get(entry.providerKey) ?? 0) + 1);
  }
  const doubles = [...perKey.entries()].filter(([, n]) => n > 1);
  console.log(`  real charges:       ${provider.ledger().length} for ${perKey.size} operations`);
  if (doubles.length > 0) {
    console.error(`\nDOUBLE CHARGE: ${doubles.length} provider keys were charged more than once`);
    process.exitCode = 1;
  } else {
    console.log('\nEvery operation was charged exactly once.');
  }

  console.log('\n7. Chaos: 200 charges on 2 worker processes killed at random, with crashes and');
  console.log('   provider faults; then a sweep, and the provider ledger reconciled\n');
  const bar = process.stderr.isTTY ? createProgressBar(process.stderr) : null;
  const report = await runChaos({
    databaseUrl: database.url,
    charges: 200,
    workers: 2,
    concurrency: 16,
    killRate: 0.02,
    crashRate: 0.05,
    ...(bar ? { onProgress: (p) => bar.update(p) } : {}),
  }).finally(() => bar?.clear());
  for (const line of renderChaosReport(report)) console.log(`  ${line}`.trimEnd());
  if (!report.ok) process.exitCode = 1;

  // Last: the summary, read from this engine's instruments (the chaos run's engines are its own).
  console.log('\nWhat chargeonce counted in steps 1-6 (its OpenTelemetry instruments)');
  for (const line of await metrics.summarize()) console.log(`  ${line}`);
} finally {
  await pool.end();
  await database.stop();
}

function show(label: string, outcome: ChargeOutcome): void {
  const body = JSON.parse(outcome.body) as { id: string; providerChargeId: string | null };
  const how = outcome.replayed ? 'replayed' : 'new';
  console.log(
    `  ${label.padEnd(34)} ${outcome.httpStatus} ${outcome.status.padEnd(9)} ${how.padEnd(8)} charge ${body.id.slice(0, 8)} provider ${String(body.providerChargeId).slice(0, 12)}`,
  );
}

function showRefund(label: string, outcome: RefundOutcome): void {
  const body = JSON.parse(outcome.body) as { refusal?: string };
  const how = outcome.replayed ? 'replayed' : 'new';
  console.log(
    `  ${label.padEnd(34)} ${outcome.httpStatus} ${outcome.status.padEnd(9)} ${how.padEnd(8)} ${body.refusal ?? `refund ${outcome.refundId.slice(0, 8)}`}`,
  );
}
