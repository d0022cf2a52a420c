import type { Attributes, Context, Span } from '@opentelemetry/api';
import { errorType } from '../observability/observer.js';
import {
  callEnded,
  callStarted,
  providerCallEnded,
  providerCallStarted,
  recordLater,
  recordQuietly,
} from '../observability/recordLater.js';
import { rejected } from '../rejected.js';
import { ProviderTransientError } from '../provider/PaymentProvider.js';
import type { ScopedKey } from '../store/keyState.js';
import type { EngineEnv } from './engineEnv.js';

/**
 * A call's telemetry.
 *
 * Everything is timed as it happens (`performance.now()`), and recorded with those times when the
 * call ends (through `recordLater`: while other calls are in flight, once the next batch has gone
 * out). A span is started at once only when something may start spans inside it: the provider
 * call's (an HTTP client's spans), a phase that runs a hook of the caller's (its SQL's), and the
 * call's own as their parent. The rest are started backdated when the call is recorded. Spans
 * and points are the same either way; what the hot path pays is a few clock readings.
 */

/** One step of a call: a phase's database work or a provider call. */
type Step = {
  /** `claim`, `complete`, or the provider call (`find`, `create`). */
  name: string;
  provider: boolean;
  startedAt: number;
  endedAt: number;
  /** Started at once when the step's work may start spans of its own; else started later. */
  span: Span | null;
  failed: boolean;
  error: unknown;
};

/** One call (`processCharge`, `processRefund`, …) while it runs. */
type CallTrace = {
  spanName: string;
  scoped: ScopedKey;
  startedAt: number;
  /** The context the call was made in: its span's parent. */
  context: Context | undefined;
  /** The call's span, once a step needed it as a parent; else started when it is recorded. */
  span: Span | null;
  /** Learnt during the call: the recovery point its attempt started from, its number. */
  from: string | null;
  attempt: number;
  /** Whether the provider's charge was adopted (null until the provider answered). */
  adopted: boolean | null;
  steps: Step[];
  /** True once recorded: a step that ends later (a provider call that outlived its timeout) is recorded on its own. */
  recorded: boolean;
};

/**
 * The calls in flight, by their key object: every step of a call is given that same object
 * (`ScopedKey`), and a step of a sweep or a reap (whose keys are not a call's) finds none. A
 * `Map`, each call taken out as it ends: a `WeakMap` of short-lived keys costs the garbage
 * collector more.
 */
const calls = new Map<ScopedKey, CallTrace>();

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
 * True when nothing is recorded (no tracer, no meter): the work then runs bare, its own promise
 * returned as is. An async frame around it would cost a promise and its turns of the microtask
 * queue on every call, four per charge, for nothing.
 */
function unobserved(env: EngineEnv): boolean {
  return !env.observer.tracing && !env.observer.instruments;
}

/**
 * One `processCharge` (or `processRefund`, `processCapture`) under its span (`spanName`), with
 * its outcome counted and its end-to-end duration recorded (with the error code when it failed).
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
 * A promise chain rather than an async function: one promise and one turn of the microtask queue
 * fewer on every call, a replay's included (with an SDK, promise hooks run for each).
 */
function observedOperation<T extends { status: string; replayed: boolean }>(
  env: EngineEnv,
  spanName: string,
  scoped: ScopedKey,
  run: () => Promise<T>,
): Promise<T> {
  const trace: CallTrace = {
    spanName,
    scoped,
    startedAt: performance.now(),
    // Taken whether or not anyone traces yet: an SDK registered mid-call still finds the parent.
    context: env.observer.activeContext(),
    span: null,
    from: null,
    attempt: 0,
    adopted: null,
    steps: [],
    recorded: false,
  };
  calls.set(scoped, trace);
  callStarted();
  return whenSettled(run, (failed, error, outcome) => {
    const endedAt = performance.now();
    calls.delete(scoped);
    // Recorded before the call stops counting, so that a call alone records at once.
    recordLater(() => recordCall(env, trace, endedAt, failed ? null : (outcome as T), error));
    callEnded();
  });
}

/**
 * The recovery point the call's attempt started from, and its number (for the call's span); a
 * sweep's or a reap's steps belong to no call, and note nothing.
 */
export function noteAttempt(scoped: ScopedKey, from: string, attempt: number): void {
  const trace = calls.get(scoped);
  if (!trace) return;
  trace.from = from;
  trace.attempt = attempt;
}

/** Whether the call adopted the provider's charge (see `noteAttempt`). */
export function noteAdopted(scoped: ScopedKey, adopted: boolean): void {
  const trace = calls.get(scoped);
  if (trace) trace.adopted = adopted;
}

/** The longest merchant id or key a refused call's span carries (a valid one is shorter). */
const MOST_REFUSED_CHARS = 255;

/**
 * A call of `def` (a charge, a refund, a capture) refused before anything was written (400):
 * counted, and its span recorded at once, ending as it starts with the error's code. The request
 * may be anything: its merchant (and key, with `recordKeys`) go on the span only when they are
 * strings of a sensible length.
 */
export function observeRefusal(
  env: EngineEnv,
  def: { spanName: string; operation(env: EngineEnv): string },
  key: unknown,
  request: unknown,
  error: unknown,
): void {
  const { observer } = env;
  const operation = def.operation(env);
  recordQuietly(() => observer.instruments?.invalid(operation));
  if (!observer.tracing) return;
  const attributes: Attributes = { 'chargeonce.operation': operation };
  const merchantId =
    typeof request === 'object' && request !== null
      ? (request as { merchantId?: unknown }).merchantId
      : undefined;
  if (readable(merchantId)) attributes['chargeonce.merchant_id'] = merchantId;
  if (observer.recordKeys && readable(key)) attributes['chargeonce.key'] = key;
  const span = observer.startSpan(def.spanName, attributes);
  if (!span) return;
  recordQuietly(() => {
    observer.fail(span, error);
    span.end();
  });
}

function readable(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MOST_REFUSED_CHARS;
}

/** What the call learnt while it ran, as its span's attributes. */
function learntAttributes(trace: CallTrace): Attributes {
  const attributes: Attributes = {};
  if (trace.from !== null) {
    attributes['chargeonce.recovery_point'] = trace.from;
    attributes['chargeonce.attempt'] = trace.attempt;
  }
  if (trace.adopted !== null) attributes['chargeonce.adopted'] = trace.adopted;
  return attributes;
}

/**
 * The call's span, started now (backdated to the call's start) if it was not yet, with what is
 * known as a call starts (its merchant and operation): what a sampler may decide on, as with a
 * span started in real time. What the call learnt is set as it is recorded, and only if a
 * sampler kept it.
 */
function callSpan(env: EngineEnv, trace: CallTrace): Span | null {
  trace.span ??= env.observer.startCallSpan(
    trace.spanName,
    chargeAttributes(env, trace.scoped),
    trace.startedAt,
    trace.context,
  );
  return trace.span;
}

/** Where a step of `trace` starts its span: as the call span's child. */
function stepParent(env: EngineEnv, trace: CallTrace | undefined): Context | undefined {
  if (!trace) return undefined;
  const span = callSpan(env, trace);
  return span ? env.observer.childContext(span, trace.context) : undefined;
}

/** The call's span, steps and points, with the times they happened at. */
function recordCall(
  env: EngineEnv,
  trace: CallTrace,
  endedAt: number,
  outcome: { status: string; replayed: boolean } | null,
  error: unknown,
): void {
  const { observer } = env;
  trace.recorded = true;
  const tracing = observer.tracing;
  const span = tracing ? callSpan(env, trace) : null;
  // A span a sampler left out records nothing: neither its attributes nor its steps are made.
  const recording = span?.isRecording() ?? false;
  if (trace.steps.length > 0) {
    // Without the call's span (a tracer that threw), its steps are still the caller's. A call
    // span nobody records (sampled out) has steps nobody would record either (the SDK's samplers
    // decide a child as its parent, or by the same trace id): theirs are not started at all.
    const spans = !span || recording;
    const parent = span && recording ? observer.childContext(span, trace.context) : trace.context;
    for (const step of trace.steps) recordStep(env, trace.scoped, step, parent, spans);
  }
  // Each part on its own: a tracer that throws costs its spans, never the call's points.
  if (span && recording) {
    recordQuietly(() => {
      // What the call learnt, then its outcome (a replay's `completed` over a takeover's point).
      const learnt = learntAttributes(trace);
      span.setAttributes(outcome ? Object.assign(learnt, outcomeAttributes(outcome)) : learnt);
      if (!outcome) observer.fail(span, error);
      span.end(endedAt);
    });
  }
  const instruments = observer.instruments;
  if (!instruments) return;
  const seconds = (endedAt - trace.startedAt) / 1000;
  // Last: what it throws is caught around the whole record (recordLater), with nothing after it.
  if (outcome) instruments.charged(trace.scoped.operation, outcome, seconds);
  else instruments.chargeFailed(trace.scoped.operation, errorType(error), seconds);
}

/**
 * The outcome's attributes. A replay (a stored outcome, or the outcome of the attempt it joined)
 * says here that it started from `completed`: the attempt that found the key completed does not
 * annotate the call itself.
 */
function outcomeAttributes(outcome: { status: string; replayed: boolean }): Attributes {
  return outcome.replayed
    ? {
        'chargeonce.outcome.status': outcome.status,
        'chargeonce.replayed': true,
        'chargeonce.recovery_point': 'completed',
      }
    : { 'chargeonce.outcome.status': outcome.status, 'chargeonce.replayed': false };
}

/**
 * One step's span (started now, backdated, unless it was started at once or `spans` is false:
 * its call's span is not recorded) and point.
 */
function recordStep(
  env: EngineEnv,
  scoped: ScopedKey,
  step: Step,
  parent: Context | undefined,
  spans = true,
): void {
  const { observer } = env;
  const span = step.span ?? (spans ? startStepSpan(env, scoped, step, parent) : null);
  if (span) {
    recordQuietly(() => {
      if (step.failed) observer.fail(span, step.error);
      span.end(step.endedAt);
    });
  }
  const seconds = (step.endedAt - step.startedAt) / 1000;
  if (!step.provider) {
    recordQuietly(() => observer.instruments?.phaseDuration(seconds, step.name));
    return;
  }
  const outcome = !step.failed
    ? 'answered'
    : step.error instanceof ProviderTransientError
      ? 'transient'
      : 'error';
  recordQuietly(() => observer.instruments?.providerDuration(seconds, step.name, outcome));
}

/** A step's span started now, backdated to when the step started. */
function startStepSpan(
  env: EngineEnv,
  scoped: ScopedKey,
  step: Step,
  parent: Context | undefined,
): Span | null {
  return env.observer.startSpan(
    step.provider ? `chargeonce.provider.${step.name}` : `chargeonce.${step.name}`,
    step.provider ? chargeAttributes(env, scoped) : phaseAttributes(env, step.name, scoped),
    step.startedAt,
    parent,
  );
}

/**
 * A step done: kept with its call, to be recorded with it. A step of no call (a sweep's) is
 * recorded on its own, under `parent` (the context it ran in), and so is one that ended after its
 * call was recorded, under the call's span.
 */
function stepDone(
  env: EngineEnv,
  trace: CallTrace | undefined,
  scoped: ScopedKey,
  step: Step,
  parent: Context | undefined,
): void {
  if (trace && !trace.recorded) {
    trace.steps.push(step);
    return;
  }
  recordLater(() =>
    recordStep(
      env,
      scoped,
      step,
      trace
        ? trace.span
          ? env.observer.childContext(trace.span, trace.context)
          : trace.context
        : parent,
    ),
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
  after: (failed: boolean, error: unknown, value: T | undefined) => void,
): Promise<T> {
  let running: Promise<T>;
  try {
    running = work();
  } catch (error) {
    running = rejected(error);
  }
  return running.then(
    (value) => {
      after(false, undefined, value);
      return value;
    },
    (error: unknown) => {
      after(true, error, undefined);
      throw error;
    },
  );
}

/** The statement of each phase, for its span's `db.operation.name`. */
const PHASE_STATEMENT: Record<string, string> = { claim: 'INSERT', complete: 'UPDATE' };

/**
 * Runs one phase's database work, timed, to be recorded with its call (a span and a point).
 *
 * The span is started at once, and made active, only when a hook of the caller's runs inside the
 * phase, so that the hook's own spans (its SQL, say) are its children. Otherwise the phase is one
 * statement of ours, which group commit may share with other charges: no span inside it could
 * belong to this charge alone, and its span is started when the call is recorded, backdated.
 *
 * `replayed` says when a claim turned out to be a replay: that one statement is all a replay is,
 * and the call's own span (`recovery_point: completed`) and duration already say all the phase's
 * would, so nothing is kept for it.
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
  const { observer } = env;
  const hooked = hookRuns ?? hookRunsIn(env, phase);
  const startedAt = performance.now();
  const trace = calls.get(scoped);
  const span = hooked
    ? observer.startSpan(
        `chargeonce.${phase}`,
        phaseAttributes(env, phase, scoped),
        undefined,
        stepParent(env, trace),
      )
    : null;
  // A step of no call starts its span later, in the context it ran in (a sweep pass's).
  const parent = !trace && !span && observer.tracing ? observer.activeContext() : undefined;
  return whenSettled(span ? () => observer.within(span, work) : work, (failed, error, result) => {
    if (!failed && !hooked && replayed?.(result as T)) return;
    const step: Step = {
      name: phase,
      provider: false,
      startedAt,
      endedAt: performance.now(),
      span,
      failed,
      error,
    };
    stepDone(env, trace, scoped, step, parent);
  });
}

/** A phase span's attributes: the charge's, and the database's after OpenTelemetry's conventions. */
function phaseAttributes(env: EngineEnv, phase: string, scoped: ScopedKey): Attributes {
  const attributes: Attributes = {
    'chargeonce.merchant_id': scoped.merchantId,
    'chargeonce.operation': scoped.operation,
    'db.system.name': 'postgresql',
    'db.collection.name': 'idempotency_keys',
    'db.operation.name': PHASE_STATEMENT[phase] ?? phase,
  };
  if (env.dbNamespace !== null) attributes['db.namespace'] = env.dbNamespace;
  if (env.observer.recordKeys) attributes['chargeonce.key'] = scoped.key;
  return attributes;
}

/** A charge's `reserve` hook runs in the claim's transaction, its `complete` hook in the completion's. */
function hookRunsIn(env: EngineEnv, phase: 'claim' | 'complete'): boolean {
  return phase === 'claim'
    ? env.hooks.reserve !== undefined && !env.separateClaim
    : env.hooks.complete !== undefined;
}

/**
 * One provider call, timed: its span (`chargeonce.provider.find` / `.create`) is recorded with
 * the call, backdated. While the adapter runs, the call's own span is the active one, so that
 * the adapter's spans (an HTTP client's) are the call's children, beside the provider span: that
 * costs one span started at once per charge, where a provider span started at once as well would
 * cost two, on every charge's path.
 */
export function observeProvider<T>(
  env: EngineEnv,
  scoped: ScopedKey,
  call: 'find' | 'create',
  work: () => Promise<T>,
): Promise<T> {
  if (unobserved(env)) return work();
  const { observer } = env;
  const startedAt = performance.now();
  const trace = calls.get(scoped);
  const callSpanNow = trace && observer.tracing ? callSpan(env, trace) : null;
  // A step of no call (a sweep's) starts its span later, in the context it ran in.
  const parent = !trace && observer.tracing ? observer.activeContext() : undefined;
  providerCallStarted();
  return whenSettled(
    callSpanNow ? () => observer.within(callSpanNow, work) : work,
    (failed, error) => {
      providerCallEnded();
      const step: Step = {
        name: call,
        provider: true,
        startedAt,
        endedAt: performance.now(),
        span: null,
        failed,
        error,
      };
      stepDone(env, trace, scoped, step, parent);
    },
  );
}
