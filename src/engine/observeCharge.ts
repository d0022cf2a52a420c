import type { Attributes, Span } from '@opentelemetry/api';
import { errorType } from '../observability/observer.js';
import { rejected } from '../rejected.js';
import { ProviderTransientError } from '../provider/PaymentProvider.js';
import type { ScopedKey } from '../store/keyState.js';
import type { EngineEnv } from './engineEnv.js';

/** The attributes every span of one call carries: never the request's amounts or metadata. */
export function chargeAttributes(env: EngineEnv, scoped: ScopedKey): Attributes {
  const attributes: Attributes = {
    'chargeonce.merchant_id': scoped.merchantId,
    'chargeonce.operation': scoped.operation,
  };
  if (env.observer.recordKeys) attributes['chargeonce.key'] = scoped.key;
  return attributes;
}

/**
 * One `processCharge` (or `processRefund`, `processCapture`) under its span (`spanName`), with
 * its outcome counted and its end-to-end duration recorded (with the error code when it failed).
 *
 * A replay is one statement, so everything here is on its hot path and kept to what the telemetry
 * needs: the span is started and made active directly (no callback wrapped around the attempt), the
 * outcome's attributes are set once, at the end, and without a tracer or a meter nothing is done.
 */
export function observeOperation<T extends { status: string; replayed: boolean }>(
  env: EngineEnv,
  spanName: string,
  scoped: ScopedKey,
  run: () => Promise<T>,
): Promise<T> {
  return unobserved(env) ? run() : observedOperation(env, spanName, scoped, run);
}

/**
 * True when nothing is recorded (no tracer, no meter): the work then runs bare, its own promise
 * returned as is. An async frame around it would cost a promise and its turns of the microtask
 * queue on every call, four per charge, for nothing.
 */
function unobserved(env: EngineEnv): boolean {
  return !env.observer.tracing && !env.observer.instruments;
}

/**
 * A promise chain rather than an async function: one promise and one turn of the microtask queue
 * fewer on every call, a replay's included (with an SDK, promise hooks run for each).
 */
function observedOperation<T extends { status: string; replayed: boolean }>(
  env: EngineEnv,
  spanName: string,
  scoped: ScopedKey,
  run: () => Promise<T>,
): Promise<T> {
  const { observer } = env;
  const instruments = observer.instruments;
  const span = observer.tracing
    ? observer.startCallSpan(spanName, chargeAttributes(env, scoped))
    : null;
  if (!span && !instruments) return run();
  const startedAt = performance.now();
  return (span ? observer.within(span, run) : run()).then(
    (outcome) => {
      if (span) {
        endAttributes(span, outcome);
        span.end();
      }
      instruments?.charged(scoped.operation, outcome, (performance.now() - startedAt) / 1000);
      return outcome;
    },
    (error: unknown) => {
      const type = span ? observer.fail(span, error) : errorType(error);
      span?.end();
      instruments?.chargeFailed(scoped.operation, type, (performance.now() - startedAt) / 1000);
      throw error;
    },
  );
}

/**
 * The outcome's attributes, set at once. A replay (a stored outcome, or the outcome of the attempt
 * it joined) says here that it started from `completed`: the attempt that found the key completed
 * does not annotate the span itself, which would cost a replay a context lookup and a second
 * write of attributes.
 */
function endAttributes(span: Span, outcome: { status: string; replayed: boolean }): void {
  if (outcome.replayed) {
    span.setAttributes({
      'chargeonce.outcome.status': outcome.status,
      'chargeonce.replayed': true,
      'chargeonce.recovery_point': 'completed',
    });
  } else {
    span.setAttributes({
      'chargeonce.outcome.status': outcome.status,
      'chargeonce.replayed': false,
    });
  }
}

/** The statement of each phase, for its span's `db.operation.name`. */
const PHASE_STATEMENT = { claim: 'INSERT', complete: 'UPDATE' } as const;

/**
 * Runs one phase's database work under its span, recording its duration.
 *
 * The span is made active only when a hook of the caller's runs inside the phase, so that the
 * hook's own spans (its SQL, say) are its children. Otherwise the phase is one statement of ours,
 * which group commit may share with other charges: no span inside it could belong to this charge
 * alone, and the span stays a leaf, at no cost of context.
 */
export function observePhase<T>(
  env: EngineEnv,
  phase: 'claim' | 'complete',
  scoped: ScopedKey,
  work: () => Promise<T>,
  hookRuns?: boolean,
  replayed?: (result: T) => boolean,
): Promise<T> {
  if (unobserved(env)) return work();
  const hooked = hookRuns ?? hookRunsIn(env, phase);
  return replayed && !hooked
    ? observeClaimRead(env, phase, scoped, work, replayed)
    : observedPhase(env, phase, scoped, work, hooked);
}

function observedPhase<T>(
  env: EngineEnv,
  phase: 'claim' | 'complete',
  scoped: ScopedKey,
  work: () => Promise<T>,
  hookRuns: boolean,
): Promise<T> {
  const { observer } = env;
  const instruments = observer.instruments;
  const span = observer.tracing
    ? observer.startSpan(`chargeonce.${phase}`, phaseAttributes(env, phase, scoped))
    : null;
  if (!span && !instruments) return work();
  const startedAt = performance.now();
  return whenSettled(
    () => (span && hookRuns ? observer.within(span, work) : work()),
    (failed, error) => {
      if (span) {
        if (failed) observer.fail(span, error);
        span.end();
      }
      instruments?.phaseDuration((performance.now() - startedAt) / 1000, phase);
    },
  );
}

/**
 * `work()`'s promise with `after` called once it settles (`failed`, and the error, when it
 * rejected or threw): one promise, where an async function with a `try`/`finally` costs a
 * charge two or three on every observed step (and a promise hook's work for each, with an
 * OpenTelemetry context manager on).
 */
function whenSettled<T>(
  work: () => Promise<T>,
  after: (failed: boolean, error?: unknown) => void,
): Promise<T> {
  let running: Promise<T>;
  try {
    running = work();
  } catch (error) {
    running = rejected(error);
  }
  return running.then(
    (value) => {
      after(false);
      return value;
    },
    (error: unknown) => {
      after(true, error);
      throw error;
    },
  );
}

/**
 * A claim that may turn out to be a replay: its span is started (backdated) and its duration
 * recorded once the statement answered, and only when it was not a replay. A replay is that one
 * statement and nothing else, so the call's own span (`recovery_point: completed`) and its
 * end-to-end duration already say all a phase's would, and recording them again would cost a
 * replay a good part of what its telemetry costs. A failed claim is recorded as such.
 */
function observeClaimRead<T>(
  env: EngineEnv,
  phase: 'claim' | 'complete',
  scoped: ScopedKey,
  work: () => Promise<T>,
  replayed: (result: T) => boolean,
): Promise<T> {
  const { observer } = env;
  const startedAt = performance.now();
  // A promise chain, as observedOperation's.
  return work().then(
    (result) => {
      if (!replayed(result)) {
        observer
          .startSpan(`chargeonce.${phase}`, phaseAttributes(env, phase, scoped), startedAt)
          ?.end();
        observer.instruments?.phaseDuration((performance.now() - startedAt) / 1000, phase);
      }
      return result;
    },
    (error: unknown) => {
      const span = observer.startSpan(
        `chargeonce.${phase}`,
        phaseAttributes(env, phase, scoped),
        startedAt,
      );
      if (span) {
        observer.fail(span, error);
        span.end();
      }
      observer.instruments?.phaseDuration((performance.now() - startedAt) / 1000, phase);
      throw error;
    },
  );
}

/** A phase span's attributes: the charge's, and the database's after OpenTelemetry's conventions. */
function phaseAttributes(
  env: EngineEnv,
  phase: 'claim' | 'complete',
  scoped: ScopedKey,
): Attributes {
  const attributes: Attributes = {
    'chargeonce.merchant_id': scoped.merchantId,
    'chargeonce.operation': scoped.operation,
    'db.system.name': 'postgresql',
    'db.collection.name': 'idempotency_keys',
    'db.operation.name': PHASE_STATEMENT[phase],
  };
  if (env.observer.recordKeys) attributes['chargeonce.key'] = scoped.key;
  return attributes;
}

/** A charge's `reserve` hook runs in the claim's transaction, its `complete` hook in the completion's. */
function hookRunsIn(env: EngineEnv, phase: 'claim' | 'complete'): boolean {
  return phase === 'claim'
    ? env.hooks.reserve !== undefined && !env.separateClaim
    : env.hooks.complete !== undefined;
}

/** One provider call under its span (`chargeonce.provider.find` / `.create`), timed. */
export function observeProvider<T>(
  env: EngineEnv,
  scoped: ScopedKey,
  call: 'find' | 'create',
  work: () => Promise<T>,
): Promise<T> {
  return unobserved(env) ? work() : observedProvider(env, scoped, call, work);
}

function observedProvider<T>(
  env: EngineEnv,
  scoped: ScopedKey,
  call: 'find' | 'create',
  work: () => Promise<T>,
): Promise<T> {
  const { observer } = env;
  const startedAt = performance.now();
  // Active while the adapter runs, so that its own spans (an HTTP client's) are children.
  const span = observer.startSpan(`chargeonce.provider.${call}`, chargeAttributes(env, scoped));
  return whenSettled(
    () => (span ? observer.within(span, work) : work()),
    (failed, error) => {
      if (span) {
        if (failed) observer.fail(span, error);
        span.end();
      }
      const outcome = !failed
        ? 'answered'
        : error instanceof ProviderTransientError
          ? 'transient'
          : 'error';
      observer.instruments?.providerDuration((performance.now() - startedAt) / 1000, call, outcome);
    },
  );
}
