import { randomUUID } from 'node:crypto';
import {
  declaredTraits,
  ProviderTransientError,
  type CreateChargeInput,
  type PaymentProvider,
  type ProviderCharge,
} from '../provider/PaymentProvider.js';
import { check, CheckFailed, describeAnswer, describeError } from './conformanceCheck.js';
import { runMovementChecks } from './movementChecks.js';

/**
 * What the conformance battery needs to know about a provider, and the faults it can ask of it.
 * Each fault hook prepares the *next* call; without it, the checks that need it are skipped.
 */
export type ConformanceFixture = {
  /** A `customerId` the provider charges successfully (Stripe: a token such as `tok_visa`). */
  customerId: string;
  /** Currencies to charge in, upper-case ISO 4217 (default: USD and EUR). */
  currencies?: readonly string[];
  /** Makes the next charge decline; returns the `customerId` to charge with. */
  decline?: () => string | Promise<string>;
  /** Makes the next call hang: no answer until the caller gives up. */
  hang?: () => void | Promise<void>;
  /** Makes the next call fail in a way that may pass on a retry (a 503 before charging). */
  transient?: () => void | Promise<void>;
  /** Makes the next call fail in a way no retry will fix (a refused request). */
  permanent?: () => void | Promise<void>;
  /** Called once the battery is done: stop what the module started. */
  close?: () => void | Promise<void>;
};

/** Options of {@link runConformance}. */
export type ConformanceOptions = {
  provider: PaymentProvider;
  fixture: ConformanceFixture;
  /** The abort check's budget: the signal aborts after it (default 500 ms). */
  budgetMs?: number;
  /** Every other call's deadline (default 10 s). */
  callTimeoutMs?: number;
};

/** One check of the battery. */
export type ConformanceCheck = {
  name: string;
  result: 'pass' | 'fail' | 'skip';
  detail: string;
};

/** What {@link runConformance} found. */
export type ConformanceReport = { ok: boolean; checks: ConformanceCheck[] };

/**
 * Runs a fixed battery against any `PaymentProvider`: each check makes real calls with fresh
 * provider keys, so point it at a sandbox or an emulator, never at live money. Checks:
 * amounts and currencies echoed, dedupe on `providerKey`, `findCharge` after a lost answer and
 * for a key never charged, declines as outcomes (replayed and found), the `AbortSignal`
 * honoured within the budget, transient vs. permanent failures, the declared window; and, for a
 * provider that has them, refunds (partial, deduped, found, each its own id, refused past the capture) and
 * captures (of an authorization, once, found).
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const { fixture } = options;
  const budgetMs = options.budgetMs ?? 500;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  // An adapter that ignores its signal must fail its check, not stall the battery.
  const provider = settlingWithin(options.provider, callTimeoutMs + 1_000);
  const currencies = fixture.currencies ?? ['USD', 'EUR'];
  const signal = () => AbortSignal.timeout(callTimeoutMs);
  const newKey = () => `conformance-${randomUUID()}`;
  const input = (overrides: Partial<CreateChargeInput> = {}): CreateChargeInput => ({
    providerKey: newKey(),
    merchantId: 'conformance',
    chargeId: randomUUID(),
    customerId: fixture.customerId,
    amountMinor: 2_000,
    currency: currencies[0] ?? 'USD',
    ...overrides,
  });
  const find = (providerKey: string, reservedAt: Date) =>
    provider.findCharge(providerKey, { signal: signal(), reservedAt });
  const expectCharge = (
    charge: ProviderCharge,
    sent: CreateChargeInput,
    status: ProviderCharge['status'],
  ) => {
    check(
      typeof charge?.id === 'string' && charge.id !== '',
      `no charge id in ${describeAnswer(charge)}`,
    );
    check(charge.status === status, `expected ${status}, got ${describeAnswer(charge)}`);
    check(
      charge.amountMinor === sent.amountMinor && charge.currency === sent.currency,
      `sent ${sent.amountMinor} ${sent.currency}, got ${describeAnswer(charge)}`,
    );
  };

  const checks: ConformanceCheck[] = [];
  const run = async (
    name: string,
    body: () => Promise<string | { skip: string }>,
  ): Promise<void> => {
    try {
      const outcome = await body();
      checks.push(
        typeof outcome === 'string'
          ? { name, result: 'pass', detail: outcome }
          : { name, result: 'skip', detail: outcome.skip },
      );
    } catch (error) {
      checks.push({
        name,
        result: 'fail',
        detail: error instanceof CheckFailed ? error.message : `threw ${describeError(error)}`,
      });
    }
  };

  await run('amounts and currencies echoed', async () => {
    const sent: string[] = [];
    for (const currency of currencies) {
      for (const amountMinor of [2_000, 123_456]) {
        const request = input({ currency, amountMinor });
        expectCharge(
          await provider.createCharge(request, { signal: signal() }),
          request,
          'succeeded',
        );
        sent.push(`${amountMinor} ${currency}`);
      }
    }
    return sent.join(', ');
  });

  await run('dedupe on providerKey', async () => {
    const request = input();
    const first = await provider.createCharge(request, { signal: signal() });
    const second = await provider.createCharge(request, { signal: signal() });
    check(first.id === second.id, `two charges under one key: ${first.id}, ${second.id}`);
    return `the same key twice answered ${first.id} both times`;
  });

  await run('findCharge after a lost answer', async () => {
    const reservedAt = new Date();
    const request = input();
    // The answer is thrown away, as a connection reset after the provider charged would.
    const made = await provider.createCharge(request, { signal: signal() });
    const found = await find(request.providerKey, reservedAt);
    check(found !== null, `findCharge answered null for a key charged as ${made.id}`);
    expectCharge(found, request, 'succeeded');
    check(found.id === made.id, `found ${found.id}, charged ${made.id}`);
    return `found ${found.id} by its key`;
  });

  await run('findCharge for a key never charged', async () => {
    const found = await find(newKey(), new Date());
    check(found === null, `expected null, got ${describeAnswer(found)}`);
    return 'null';
  });

  await run('declines are outcomes, replayed and found', async () => {
    if (!fixture.decline) return { skip: 'the fixture cannot make a charge decline' };
    const reservedAt = new Date();
    const request = input({ customerId: await fixture.decline() });
    const declined = await provider.createCharge(request, { signal: signal() });
    expectCharge(declined, request, 'declined');
    check(
      typeof declined.declineCode === 'string' && declined.declineCode !== '',
      `no declineCode in ${describeAnswer(declined)}`,
    );
    const replayed = await provider.createCharge(request, { signal: signal() });
    check(
      replayed.id === declined.id && replayed.status === 'declined',
      `the same key again answered ${describeAnswer(replayed)}`,
    );
    const found = await find(request.providerKey, reservedAt);
    check(
      found?.id === declined.id && found.status === 'declined',
      `findCharge answered ${describeAnswer(found)}`,
    );
    return `declined (${declined.declineCode}), replayed and found as ${declined.id}`;
  });

  await run(`AbortSignal honoured within ${budgetMs} ms`, async () => {
    if (!fixture.hang) return { skip: 'the fixture cannot make a call hang' };
    await fixture.hang();
    const started = performance.now();
    const error = await provider
      .createCharge(input(), { signal: AbortSignal.timeout(budgetMs) })
      .then(
        (charge) => new CheckFailed(`a hung call answered ${describeAnswer(charge)}`),
        (e: unknown) => e,
      );
    const tookMs = Math.round(performance.now() - started);
    if (error instanceof CheckFailed) throw error;
    check(
      error instanceof ProviderTransientError,
      `a timeout must be a ProviderTransientError, got ${describeError(error)}`,
    );
    // Timers and a busy machine: a quarter of the budget, and at least 250 ms, of slack.
    const limit = budgetMs + Math.max(250, budgetMs / 4);
    check(tookMs <= limit, `gave up after ${tookMs} ms (limit ${limit} ms)`);
    return `gave up after ${tookMs} ms: ${describeError(error)}`;
  });

  await run('transient failures are ProviderTransientError', async () => {
    if (!fixture.transient) return { skip: 'the fixture cannot make a call fail transiently' };
    await fixture.transient();
    const request = input();
    const error = await provider.createCharge(request, { signal: signal() }).then(
      (charge) => new CheckFailed(`the failing call answered ${describeAnswer(charge)}`),
      (e: unknown) => e,
    );
    if (error instanceof CheckFailed) throw error;
    check(error instanceof ProviderTransientError, `got ${describeError(error)}`);
    expectCharge(await provider.createCharge(request, { signal: signal() }), request, 'succeeded');
    return `${describeError(error)}, then the retry charged`;
  });

  await run('permanent failures are not ProviderTransientError', async () => {
    if (!fixture.permanent) return { skip: 'the fixture cannot make a call fail permanently' };
    await fixture.permanent();
    const error = await provider.createCharge(input(), { signal: signal() }).then(
      (charge) => new CheckFailed(`the failing call answered ${describeAnswer(charge)}`),
      (e: unknown) => e,
    );
    if (error instanceof CheckFailed) throw error;
    check(
      !(error instanceof ProviderTransientError),
      `a failure no retry fixes was called transient: ${describeError(error)}`,
    );
    return describeError(error);
  });

  await runMovementChecks({ provider, run, chargeInput: input, newKey, signal });

  await run('idempotency window and lookup declared', () => {
    const windowMs = provider.idempotencyWindowMs;
    check(
      windowMs === undefined || (typeof windowMs === 'number' && windowMs > 0),
      `idempotencyWindowMs must be a positive number, got ${String(windowMs)}`,
    );
    const authoritative = provider.lookupIsAuthoritative ?? true;
    return Promise.resolve(
      `window ${windowMs === undefined ? 'unbounded' : `${windowMs / 3_600_000} h`}, lookup ${authoritative ? 'authoritative' : 'not authoritative (parks past the window)'}`,
    );
  });

  return { ok: checks.every((c) => c.result !== 'fail'), checks };
}

/**
 * The provider, with every call given up (a failed check) when it has not settled `ms` after
 * it began, whatever its signal said.
 */
function settlingWithin(provider: PaymentProvider, ms: number): PaymentProvider {
  const deadline = <T>(call: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CheckFailed(`a call did not settle within ${ms} ms`)),
        ms,
      );
      call().then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  return {
    ...declaredTraits(provider),
    createCharge: (input, opts) => deadline(() => provider.createCharge(input, opts)),
    findCharge: (providerKey, opts) => deadline(() => provider.findCharge(providerKey, opts)),
    ...(provider.createRefund && provider.findRefund
      ? {
          createRefund: (input, opts) => deadline(() => provider.createRefund!(input, opts)),
          findRefund: (providerKey, opts) =>
            deadline(() => provider.findRefund!(providerKey, opts)),
        }
      : {}),
    ...(provider.capture && provider.findCapture
      ? {
          capture: (input, opts) => deadline(() => provider.capture!(input, opts)),
          findCapture: (input, opts) => deadline(() => provider.findCapture!(input, opts)),
        }
      : {}),
  };
}

/** The report as a table, one line per check. */
export function renderConformanceReport(report: ConformanceReport): string[] {
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.map(
    (c) => `${c.result.toUpperCase().padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}`,
  );
  const count = (result: ConformanceCheck['result']) =>
    report.checks.filter((c) => c.result === result).length;
  lines.push(
    '',
    `${report.ok ? 'Conforms' : 'DOES NOT CONFORM'}: ${count('pass')} of ${report.checks.length} checks passed (${count('fail')} failing, ${count('skip')} skipped)`,
  );
  return lines;
}
