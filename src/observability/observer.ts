import type { Attributes, Context, Meter, Span, Tracer } from '@opentelemetry/api';
import type { ChargeOnceEvent } from './events.js';
import { createEventSink, type EventLogger, type EventSink } from './eventSink.js';
import { createInstruments, type Instruments } from './instruments.js';
import { telemetryFailed } from './recordLater.js';

/** Options of the engine's telemetry (OpenTelemetry), all optional. */
export type TelemetryOptions = {
  /**
   * An OpenTelemetry `Tracer`; by default the global one (`trace.getTracer('chargeonce')`), a
   * no-op until an SDK is registered.
   */
  tracer?: object;
  /** An OpenTelemetry `Meter`; by default the global one (`metrics.getMeter('chargeonce')`). */
  meter?: object;
  /**
   * Put the idempotency key on spans (`chargeonce.key`). Off by default: a key may be derived from
   * data you would not put in traces.
   * @defaultValue `false`
   */
  recordKeys?: boolean;
};

/** What the engine reports to: events (onEvent, logger), spans and metrics. */
export type Observer = {
  /** Sends an event to `onEvent` and the logger, and counts it. Never throws. */
  event(event: ChargeOnceEvent): void;
  /**
   * Runs `work` in a span named `name` (a child of the active one, and active itself while `work`
   * runs), ending it with the error code of a failure; without a tracer, just runs it.
   */
  span<T>(
    name: string,
    attributes: Attributes,
    work: (span: Span | null) => Promise<T>,
  ): Promise<T>;
  /**
   * Starts a span named `name`, a child of the active one, without making it active (see
   * `within`): for the hot path, which ends its spans itself (`fail`, `end`) rather than through
   * a callback. `startTime` (a `performance.now()` reading) backdates a span started only once
   * its work is known to deserve one. Null without a tracer.
   */
  startSpan(
    name: string,
    attributes: Attributes,
    startTime?: number,
    parent?: Context,
  ): Span | null;
  /**
   * Starts the span of one call (`chargeonce.process_charge`, …), as `startSpan`, in the context
   * the call was made in (`parent`, from `activeContext`).
   */
  startCallSpan(
    name: string,
    attributes: Attributes,
    startTime: number,
    parent: Context | undefined,
  ): Span | null;
  /** The active context (undefined without the OpenTelemetry API): a call's spans start in it. */
  activeContext(): Context | undefined;
  /** `parent` (or the active context) with `span` as its span: where `span`'s children start. */
  childContext(span: Span, parent: Context | undefined): Context | undefined;
  /** Runs `work` with `span` active, so that the spans started inside it are its children. */
  within<T>(span: Span, work: () => Promise<T>): Promise<T>;
  /** Marks `span` as failed with `error`'s code (`error.type`, status ERROR); returns the code. */
  fail(span: Span, error: unknown): string;
  /** The instruments (no-op ones until an SDK is registered). */
  readonly instruments: Instruments | null;
  /** False when no span can start (no tracer): the hot path then builds no span attributes. */
  readonly tracing: boolean;
  readonly recordKeys: boolean;
};

/** Loaded once per process: `@opentelemetry/api` is an optional peer dependency. */
let api: Promise<typeof import('@opentelemetry/api') | null> | undefined;
function loadApi() {
  return (api ??= import('@opentelemetry/api').catch(() => null));
}

/** An error's stable code (a chargeonce error's `code`), else its class name. */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    if (error instanceof Error) return error.name;
  }
  return 'unknown';
}

/**
 * The observer of one engine. The OpenTelemetry API is loaded on first use (with the pool): until
 * then, and without it, spans and metrics cost nothing.
 */
export async function createObserver(options: {
  onEvent?: ((event: ChargeOnceEvent) => void) | undefined;
  logger?: EventLogger | undefined;
  telemetry?: TelemetryOptions | false | undefined;
}): Promise<Observer> {
  const sink: EventSink = createEventSink(options);
  const telemetry = options.telemetry === false ? null : (options.telemetry ?? {});
  const otel = telemetry ? await loadApi() : null;
  const tracer = (telemetry?.tracer ?? otel?.trace.getTracer('chargeonce')) as Tracer | undefined;
  const meter = (telemetry?.meter ?? otel?.metrics.getMeter('chargeonce')) as Meter | undefined;
  // The global meter with no SDK registered is the API's no-op, for good: a meter taken before
  // registration stays one. Its instruments would record nothing, at a cost on every call.
  const instruments = meter && meter !== otel?.createNoopMeter() ? instrumentsQuietly(meter) : null;
  const statusError = otel?.SpanStatusCode.ERROR ?? 2;
  const isTracing = tracingCheck(otel, tracer, telemetry?.tracer !== undefined);

  const startSpan = (
    name: string,
    attributes: Attributes,
    startTime?: number,
    parent?: Context,
  ): Span | null =>
    tracer && isTracing() ? startQuietly(tracer, name, attributes, startTime, parent) : null;
  let contextChecked = false;
  const startCallSpan = (
    name: string,
    attributes: Attributes,
    startTime: number,
    parent: Context | undefined,
  ): Span | null => {
    const span = startSpan(name, attributes, startTime, parent);
    if (span && !contextChecked && otel) contextChecked = warnWithoutContextManager(otel);
    return span;
  };
  // Without the API there is no context to carry the span in: its children become roots.
  const within = <T>(span: Span, work: () => Promise<T>): Promise<T> =>
    otel ? otel.context.with(otel.trace.setSpan(otel.context.active(), span), work) : work();
  const fail = (span: Span, error: unknown): string => {
    const type = errorType(error);
    span.setAttribute('error.type', type);
    span.setStatus({ code: statusError, message: type });
    return type;
  };

  const inSpan = async <T>(span: Span, work: (span: Span | null) => Promise<T>): Promise<T> => {
    try {
      return await within(span, () => work(span.isRecording() ? span : null));
    } catch (error) {
      fail(span, error);
      throw error;
    } finally {
      span.end();
    }
  };

  return {
    instruments,
    get tracing() {
      return isTracing();
    },
    recordKeys: telemetry?.recordKeys === true,
    event(event) {
      if (sink.enabled) sink.emit(event);
      instruments?.countEvent(event);
    },
    startSpan,
    startCallSpan,
    activeContext: () => otel?.context.active(),
    childContext: (span, parent) =>
      otel ? otel.trace.setSpan(parent ?? otel.context.active(), span) : undefined,
    within,
    fail,
    span(name, attributes, work) {
      const span = startSpan(name, attributes);
      return span ? inSpan(span, work) : work(null);
    },
  };
}

/**
 * The engine's instruments, or none when the meter threw making them (said once): a broken meter
 * never fails a call, it only records nothing.
 */
function instrumentsQuietly(meter: Meter): Instruments | null {
  try {
    return createInstruments(meter);
  } catch (error) {
    telemetryFailed(error);
    return null;
  }
}

/** A span, or null when the tracer threw (said once): a broken tracer never fails a call. */
function startQuietly(
  tracer: Tracer,
  name: string,
  attributes: Attributes,
  startTime: number | undefined,
  parent: Context | undefined,
): Span | null {
  try {
    return tracer.startSpan(
      name,
      startTime === undefined ? { attributes } : { attributes, startTime },
      parent,
    );
  } catch (error) {
    telemetryFailed(error);
    return null;
  }
}

/**
 * Whether a span started now would be recorded by anyone: always with a tracer of the caller's;
 * with the global one, only while an SDK is registered behind the API's proxy (it may register
 * after the engine is made, so this is asked on every call, for the price of a property read).
 * Without one, the hot path builds no span, no attribute and no async frame.
 */
function tracingCheck(
  otel: typeof import('@opentelemetry/api') | null,
  tracer: Tracer | undefined,
  given: boolean,
): () => boolean {
  if (!tracer) return () => false;
  if (given || !otel) return () => true;
  // The API's no-op provider, which an empty proxy delegates to (one per copy of the API).
  const noop = new otel.ProxyTracerProvider().getDelegate();
  const { trace, ProxyTracerProvider } = otel;
  return () => {
    const provider = trace.getTracerProvider();
    return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== noop;
  };
}

/**
 * Says once, on `console.warn`, when no OpenTelemetry context manager carries the active span
 * (an SDK registered the usual way brings one; a tracer passed in options may come without):
 * then the spans a provider adapter or a hook of the caller's starts are not children of
 * chargeonce's (chargeonce's own spans name their parents themselves). Returns true: checked.
 */
function warnWithoutContextManager(otel: typeof import('@opentelemetry/api')): boolean {
  const probe = otel.trace.wrapSpanContext(otel.INVALID_SPAN_CONTEXT);
  const carried = otel.context.with(
    otel.trace.setSpan(otel.context.active(), probe),
    () => otel.trace.getSpan(otel.context.active()) === probe,
  );
  if (!carried) {
    console.warn(
      'chargeonce: spans are recorded but no OpenTelemetry context manager is registered: ' +
        "the spans a provider adapter or a hook starts will not be children of chargeonce's. " +
        'Register one (the Node SDK does; or context.setGlobalContextManager(new ' +
        'AsyncLocalStorageContextManager().enable()) from @opentelemetry/context-async-hooks).',
    );
  }
  return true;
}

/** An observer that reports nothing: before the engine's is ready, and in tests of parts. */
export const SILENT_OBSERVER: Observer = {
  instruments: null,
  tracing: false,
  recordKeys: false,
  event: () => {},
  span: (_name, _attributes, work) => work(null),
  startSpan: () => null,
  startCallSpan: () => null,
  activeContext: () => undefined,
  childContext: () => undefined,
  within: (_span, work) => work(),
  fail: (_span, error) => errorType(error),
};
