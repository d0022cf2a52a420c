import { MeterProvider, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import type { Meter } from '@opentelemetry/api';
import { OnDemandMetricReader } from './onDemandMetricReader.js';

/** A meter for an engine, and a short summary of what that engine's instruments counted. */
export function createMetricsSummary(): { meter: Meter; summarize(): Promise<string[]> } {
  const reader = new OnDemandMetricReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('chargeonce'),
    async summarize() {
      const { resourceMetrics } = await reader.collect();
      const lines: string[] = [];
      for (const metric of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)) {
        const name = metric.descriptor.name;
        if (name.endsWith('.duration')) {
          for (const point of metric.dataPoints as DataPoint<Histogram>[]) {
            const { count, sum = 0 } = point.value;
            const labels = Object.values(point.attributes).join(' ');
            if (count > 0) {
              lines.push(
                `${name} ${labels}: ${count} × mean ${((sum / count) * 1000).toFixed(1)} ms`,
              );
            }
          }
          continue;
        }
        if (name.startsWith('chargeonce.keys.')) continue;
        for (const point of metric.dataPoints as DataPoint<number>[]) {
          const labels = Object.entries(point.attributes)
            // Charges go unnamed; refunds and captures say so.
            .filter(([k, v]) => k !== 'chargeonce.operation' || v !== 'charge')
            .map(([k, v]) => `${k.replace('chargeonce.', '')}=${String(v)}`)
            .join(' ');
          lines.push(`${name}${labels ? ` {${labels}}` : ''}: ${point.value}`);
        }
      }
      return lines;
    },
  };
}
