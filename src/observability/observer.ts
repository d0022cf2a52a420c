import type { Attributes, Meter, Span, Tracer } from '@opentelemetry/api';
import type { ChargeOnceEvent } from './events.js';
import { createEventSink, type EventLogger, type EventSink } from './eventSink.js';
import { createInstruments, type Instruments } from './instruments.js';

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
   * Runs `work` in a span named `name` (a child of the active one), ending it with the error
   * code of a failure; without a tracer, just runs it.
   */
  span<T>(
    name: string,
    attributes: Attributes,
    work: (span: Span | null) => Promise<T>,
  ): Promise<T>;
  /** Adds attributes to the active span (the charge's own, between its child spans). */
  annotate(attributes: Attributes): void;
  /** The instruments (no-op ones until an SDK is registered). */
  readonly instruments: Instruments | null;
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
  const instruments = meter ? createInstruments(meter) : null;
  const statusError = otel?.SpanStatusCode.ERROR ?? 2;

  return {
    instruments,
    recordKeys: telemetry?.recordKeys === true,
    event(event) {
      if (sink.enabled) sink.emit(event);
      instruments?.countEvent(event);
    },
    annotate(attributes) {
      if (tracer) otel?.trace.getActiveSpan()?.setAttributes(attributes);
    },
    span(name, attributes, work) {
      if (!tracer) return work(null);
      return tracer.startActiveSpan(name, { attributes }, async (span) => {
        try {
          return await work(span.isRecording() ? span : null);
        } catch (error) {
          const type = errorType(error);
          span.setAttribute('error.type', type);
          span.setStatus({ code: statusError, message: type });
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}

/** An observer that reports nothing: before the engine's is ready, and in tests of parts. */
export const SILENT_OBSERVER: Observer = {
  instruments: null,
  recordKeys: false,
  event: () => {},
  annotate: () => {},
  span: (_name, _attributes, work) => work(null),
};
