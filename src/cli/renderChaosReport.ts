import type { ChaosReport } from '../chaos/ChaosReport.js';
import type { BatchCounts } from '../chaos/countGroupCommit.js';
import type { Violation } from '../chaos/reconcile.js';

/** How many violations, unexpected errors and unsettled operations are spelled out. */
const SHOWN = 5;

/** The report of a chaos run as lines of text: a table, then whatever went wrong. */
export function renderChaosReport(report: ChaosReport): string[] {
  const c = report.config;
  const seconds = (report.durationMs / 1000).toFixed(1);
  const where = c.workers === 0 ? 'in process' : `on ${c.workers} workers`;
  const lines = [
    `chargeonce chaos: run ${report.runId}, seed ${report.seed}, ${report.charges} operations ${where} × ${c.concurrency}, ${seconds} s`,
    '',
  ];
  const row = (label: string, value: number | string, detail = '') =>
    lines.push(`  ${label.padEnd(20)} ${String(value).padStart(7)}   ${detail}`.trimEnd());

  const { operations: planned, movements } = report;
  row(
    'operations settled',
    report.settled,
    `of ${report.charges}: charges ${planned.charges}, refunds ${planned.refunds}, captures ${planned.captures}`,
  );
  row('charges', sum(report.outcomes), list(report.outcomes));
  row('refunds', sum(movements.refund), list(movements.refund));
  row('captures', sum(movements.capture), list(movements.capture));
  row(
    'refusals',
    sum(report.refusals),
    nonEmpty(report.refusals, (s) => `by chargeonce: ${s}`),
  );
  row(
    'attempts',
    report.attempts,
    `retries ${report.retries}${nonEmpty(report.retryableErrors, (s) => ` (${s})`)}`,
  );
  row(
    'second submissions',
    report.duplicates,
    c.waitMs > 0 ? 'sent alongside a first attempt, through the other in-progress policy' : '',
  );
  row(
    'crashes injected',
    report.crashes.total,
    `${list(report.crashes.byPoint)}; in refunds and captures ${report.crashes.onMovements}`,
  );
  row(
    'stalls injected',
    report.stalls,
    `attempts set to stall past their lease; ${report.suspends} of them suspended their process instead, its monotonic clock stopped`,
  );
  row(
    'claims held',
    report.holds.held,
    `retried meanwhile: answered 409 while held ${report.holds.answered}, blocked until released ${report.holds.blocked}, otherwise ${report.holds.otherwise}${report.holds.held > 0 ? `; ${refusalText(report.holds.slowestRefusalMs)}` : ''}`,
  );
  row('clock steps', report.clockSteps, 'wall clock stepped ±1 min or ±1 h');
  row(
    'provider outages',
    report.outages.started,
    `${report.outages.refusedRequests} requests refused, ${c.outageMs} ms each`,
  );
  row('processes killed', report.processesKilled, `${report.processesStarted} started`);
  if (c.ledger === 'provider-module') {
    row('provider faults', '-', 'injected by the provider module, not the harness');
  } else {
    row('provider faults', sum(report.providerFaults), list(report.providerFaults));
  }
  row('provider charges', report.providerCharges);
  const { refunds, captures } = report.providerMovements;
  row(
    'provider movements',
    refunds.succeeded + refunds.failed + captures.succeeded + captures.failed,
    `refunds ${refunds.succeeded} (failed ${refunds.failed}), captures ${captures.succeeded} (failed ${captures.failed})`,
  );
  const { claims, completions } = report.groupCommit;
  row('batched claims', claims.batches, batchDetail(claims));
  row('batched completions', completions.batches, batchDetail(completions));
  const { waited, woken, answered, timedOut, failed } = report.waits;
  row(
    'waits on keys',
    waited,
    c.waitMs > 0
      ? `up to ${c.waitMs} ms: woken by a notification ${woken}, answered otherwise ${answered}, timed out (409) ${timedOut}, failed ${failed}`
      : 'no engine waits (waitMs 0)',
  );
  row('replays', report.replays);
  row(
    'adoptions',
    report.adoptions.total,
    `by clients ${report.adoptions.byClients}, by the sweeps ${report.adoptions.bySweep}`,
  );
  row('clients gone', report.abandoned, 'walked away after a failure; came back after the sweep');
  const { passes, examined, ...sweep } = report.sweep;
  row('swept keys', examined, `${passes} ${passes === 1 ? 'pass' : 'passes'}${listed(sweep)}`);
  const { passes: bgPasses, examined: bgExamined, ...bgSweep } = report.background.sweep;
  row(
    'background sweeps',
    bgExamined,
    `${bgPasses} passes while charging${listed(bgSweep)}; reaped ${report.background.reaped}`,
  );
  row(
    'late retries',
    report.late.visits,
    `after the reaper: refused ${report.late.expired}, replayed ${report.late.replayed}`,
  );
  // An operation's `parked` above is what its client was last told: most of those keys were
  // parked by a sweep during an outage, then requeued and finished (counted here).
  row(
    'requeued keys',
    report.requeued,
    'parked by a sweep while the provider could not answer, requeued after it as a person would, and finished (a client that asked while it was parked was told "parked", and counts so above)',
  );
  row(
    'parked keys',
    report.parked.length,
    "still parked at the end: the engine refused the provider's answer, left to a person",
  );
  row('violations', report.violations.length);
  lines.push('');

  if (report.violations.length > 0) {
    lines.push(`VIOLATIONS: ${report.violations.length}`);
    report.violations.slice(0, SHOWN).forEach((v, i) => lines.push(`  ${i + 1}. ${describe(v)}`));
    more(lines, report.violations.length);
  }
  if (report.unexpectedErrors.length > 0) {
    lines.push(`UNEXPECTED ERRORS: ${report.unexpectedErrors.length}`);
    for (const e of report.unexpectedErrors.slice(0, SHOWN)) {
      lines.push(`  ${e.merchantId} ${e.key}: ${e.code}: ${e.message}`);
    }
    more(lines, report.unexpectedErrors.length);
  }
  if (report.holds.blocked > 0) {
    lines.push(
      `RETRIES OF HELD CLAIMS BLOCKED: ${report.holds.blocked} waited on the key until its holder's transaction ended`,
    );
  }
  if (report.holds.otherwise > 0) {
    lines.push(
      `RETRIES OF HELD CLAIMS ANSWERED OTHERWISE: ${report.holds.otherwise} got something else than a 409 while the key was held`,
    );
  }
  if (report.unsettled.length > 0) {
    lines.push(`UNSETTLED OPERATIONS: ${report.unsettled.length}`);
    for (const u of report.unsettled.slice(0, SHOWN)) {
      lines.push(
        `  ${u.merchantId} ${u.key} (${u.operation}): last error ${u.lastError ?? 'none'}`,
      );
    }
    more(lines, report.unsettled.length);
  }
  lines.push(
    report.ok
      ? 'No violations: every operation settled, each key moved money at most once, refunds within captures within authorizations, every replay identical.'
      : `FAILED: replay the same requests and fault rates with --seed ${report.seed}.`,
  );
  return lines;
}

/** A hot statement's batches: what they carried, and the statements that went alone. */
function batchDetail(counts: BatchCounts): string {
  const mean = counts.batches === 0 ? 0 : counts.batchedKeys / counts.batches;
  return `statements of several keys: ${counts.batchedKeys} keys, ${mean.toFixed(1)} per batch, largest ${counts.largest}; ${counts.alone} alone`;
}

function describe(v: Violation): string {
  switch (v.kind) {
    case 'double_charge':
      return `double charge under ${v.providerKey}: ${v.providerChargeIds.join(', ')}`;
    case 'lost_charge':
      return `lost charge ${v.providerChargeId} under ${v.providerKey}: ${v.detail}`;
    case 'phantom_charge':
      return `phantom charge ${v.chargeId} (${v.merchantId}): ${v.detail}`;
    case 'amount_mismatch':
      return `amount mismatch on charge ${v.chargeId} (${v.merchantId}): ${v.detail}`;
    case 'outcome_mismatch':
      return `outcome mismatch on ${v.merchantId} ${v.key ?? '(no key)'}: ${v.detail}`;
    case 'unfinished_key':
      return `unfinished key ${v.merchantId} ${v.key} at ${v.recoveryPoint}`;
    case 'replay_mismatch':
      return `replay mismatch on ${v.merchantId} ${v.key}: ${v.detail}`;
    case 'duplicate_outcome':
      return `one key, several charges: ${v.merchantId} ${v.key} answered with ${v.chargeIds.join(', ')}`;
    case 'double_movement':
      return `double ${v.movement} under ${v.providerKey}: ${v.providerIds.join(', ')}`;
    case 'lost_movement':
      return `lost ${v.movement} ${v.providerId} under ${v.providerKey}: ${v.detail}`;
    case 'captured_twice':
      return `authorization ${v.providerChargeId} captured twice: ${v.captureIds.join(', ')}`;
    case 'over_capture':
      return `over-capture of ${v.providerChargeId}: ${v.detail}`;
    case 'over_refund':
      return `over-refund of ${v.providerChargeId}: ${v.detail}`;
    case 'movement_mismatch':
      return `${v.movement} mismatch on ${v.merchantId} ${v.key ?? '(no key)'} (${v.movementId}): ${v.detail}`;
    case 'totals_mismatch':
      return `totals mismatch on charge ${v.chargeId} (${v.merchantId}): ${v.detail}`;
    case 'reservation_held':
      return `reservation held on charge ${v.chargeId} (${v.merchantId}): ${v.detail}`;
  }
}

function more(lines: string[], total: number): void {
  if (total > SHOWN) lines.push(`  … and ${total - SHOWN} more (--json lists them all)`);
}

/** `: name n, …` for the counts above zero, or nothing when none is. */
function listed(counts: Record<string, number>): string {
  const text = list(counts);
  return text === '' ? '' : `: ${text}`;
}

function list(counts: Record<string, number>): string {
  return Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
}

function nonEmpty(counts: Record<string, number>, wrap: (text: string) => string): string {
  const text = list(counts);
  return text ? wrap(text) : '';
}

function sum(counts: Record<string, number>): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** The slowest refusal of a held claim's retry, or that none was sent through a refusing engine. */
function refusalText(slowestMs: number | null): string {
  return slowestMs === null
    ? 'every retry waited (none refused at once)'
    : `a refusing retry answered in ${slowestMs} ms at most`;
}
