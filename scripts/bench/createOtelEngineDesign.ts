import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { OnDemandMetricReader } from '../support/onDemandMetricReader.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createEngineDesign } from './createEngineDesign.js';
import type { Design, DesignConnection } from './Design.js';
import { headSampler } from './headSampler.js';

/** Exports nothing, successfully: what is measured is the SDK recording, not a network. */
const discardingExporter: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

/**
 * `processCharge` with an OpenTelemetry SDK registered: every span recorded (batched to an
 * exporter that discards them, as a real one would send them off the hot path), every metric
 * point recorded, an AsyncLocalStorage context manager so child spans find their parent. Against
 * `engine`, which runs with no SDK: what the instrumentation costs when someone listens. With
 * `sampledShare`, only that share of calls is traced (`engine-otel-sampled`, see headSampler).
 */
export async function createOtelEngineDesign(
  connection: DesignConnection,
  provider: BenchProvider,
  sampledShare?: number,
): Promise<Design> {
  // Registered only while this design's calls run (`during`): a context manager puts an
  // AsyncLocalStorage on every async resource of the process, so left in place for the whole
  // bench it would also cost the designs it is compared with.
  const contextManager = new AsyncLocalStorageContextManager();
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(discardingExporter)],
    ...(sampledShare === undefined ? {} : { sampler: headSampler(sampledShare) }),
  });
  const meterProvider = new MeterProvider({ readers: [new OnDemandMetricReader()] });
  const design = await createEngineDesign(connection, provider, {
    tracer: tracerProvider.getTracer('chargeonce'),
    meter: meterProvider.getMeter('chargeonce'),
  });
  return {
    ...design,
    name: sampledShare === undefined ? 'engine-otel' : 'engine-otel-sampled',
    during: async (run) => {
      context.setGlobalContextManager(contextManager.enable());
      try {
        return await run();
      } finally {
        // Unregisters it and disables its AsyncLocalStorage (the next `enable` brings it back).
        context.disable();
      }
    },
    end: async () => {
      await design.end();
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
}
