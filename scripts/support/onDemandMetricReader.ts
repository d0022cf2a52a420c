import { AggregationTemporality, MetricReader } from '@opentelemetry/sdk-metrics';

/**
 * A metric reader collected only when asked (`collect()`), cumulative: for reading an engine's
 * instruments at a point of one's choosing (the demo's summary, tests), or never (the bench,
 * where only the cost of recording counts).
 */
export class OnDemandMetricReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}
