import { afterAll, beforeAll, beforeEach } from 'vitest';
import { context, type Attributes, type Meter } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { MeterProvider, type DataPoint, type MetricData } from '@opentelemetry/sdk-metrics';
import { OnDemandMetricReader } from '../../scripts/support/onDemandMetricReader.js';
import { createTestDatabase, type TestDatabase } from './testDatabase.js';

/** The OpenTelemetry SDK of one test file, and its test database (see `useTelemetrySdk`). */
export type TelemetrySdk = {
  /** The test database, made before the file's first test. */
  readonly db: TestDatabase;
  /** Every span ended so far in this test (emptied before each). */
  readonly spans: InMemorySpanExporter;
  readonly tracerProvider: BasicTracerProvider;
  /** The context manager registered globally (a test may disable it, then enable it again). */
  readonly contextManager: AsyncLocalStorageContextManager;
  /** A meter whose points this test alone has recorded (a new provider and reader per test). */
  meter: () => Meter;
  /** The spans ended so far named `name`. */
  named: (name: string) => ReadableSpan[];
  /** What the metric named `name` holds now, collected on demand. */
  metric: (name: string) => Promise<MetricData | undefined>;
  /** Measurements a histogram recorded, in the points whose attributes include `attributes`. */
  histogramCount: (name: string, attributes?: Attributes) => Promise<number>;
  /** A counter's sum over the points whose attributes include `attributes`. */
  sum: (name: string, attributes?: Attributes) => Promise<number>;
};

/**
 * The OpenTelemetry SDK as the telemetry tests use it: spans into memory as they end, metrics
 * read on demand, an AsyncLocalStorage context manager so that spans find their parents. Call it
 * at the top of a test file: it registers the file's hooks (a test database; a fresh reader and
 * empty span list before each test).
 */
export function useTelemetrySdk(): TelemetrySdk {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const contextManager = new AsyncLocalStorageContextManager();
  let db: TestDatabase | undefined;
  let reader = new OnDemandMetricReader();
  let meterProvider = new MeterProvider({ readers: [reader] });

  beforeAll(async () => {
    db = await createTestDatabase();
    context.setGlobalContextManager(contextManager.enable());
  });
  afterAll(async () => {
    context.disable();
    await db?.drop();
  });
  beforeEach(() => {
    spans.reset();
    reader = new OnDemandMetricReader();
    meterProvider = new MeterProvider({ readers: [reader] });
  });

  const metric = async (name: string): Promise<MetricData | undefined> => {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
  };
  const matching = <T>(points: DataPoint<T>[], attributes: Attributes) =>
    points.filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v));

  return {
    get db() {
      if (!db) throw new Error('the test database is made before the first test');
      return db;
    },
    spans,
    tracerProvider,
    contextManager,
    meter: () => meterProvider.getMeter('test'),
    named: (name) => spans.getFinishedSpans().filter((s) => s.name === name),
    metric,
    histogramCount: async (name, attributes = {}) => {
      const points = ((await metric(name))?.dataPoints ?? []) as DataPoint<{ count: number }>[];
      return matching(points, attributes).reduce((total, p) => total + p.value.count, 0);
    },
    sum: async (name, attributes = {}) => {
      const points = ((await metric(name))?.dataPoints ?? []) as DataPoint<number>[];
      return matching(points, attributes).reduce((total, p) => total + p.value, 0);
    },
  };
}
