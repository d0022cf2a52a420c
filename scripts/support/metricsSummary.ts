import { DataPointType, MeterProvider, type DataPoint } from '@opentelemetry/sdk-metrics';
import type { Attributes, Meter } from '@opentelemetry/api';
import { OnDemandMetricReader } from './onDemandMetricReader.js';

/**
 * Attributes that say how a call ended rather than what was timed: a histogram's line sums over
 * them (its breakdown is by operation, phase or provider call).
 */
const OUTCOME_ATTRIBUTES = new Set([
  'chargeonce.outcome.status',
  'chargeonce.provider.outcome',
  'error.type',
]);

/**
 * A series' label: its attribute values, `true` ones by their name (`replayed`), `false` ones
 * left out, and the operation only when it is not a charge; a series with nothing left is
 * `charge`.
 */
function label(attributes: Attributes, skip: ReadonlySet<string> = new Set()): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(attributes)) {
    if (skip.has(key) || value === false) continue;
    if (key === 'chargeonce.operation' && value === 'charge') continue;
    parts.push(value === true ? key.replace(/^.*\./, '') : String(value));
  }
  return parts.join(' ') || 'charge';
}

/** `total (a 1, b 2)`, or `total (a)` for one series, or `total` for one unlabeled series. */
function breakdown(total: string, parts: [string, string][]): string {
  if (parts.length === 1 && parts[0]?.[0] === 'charge') return total;
  if (parts.length === 1) return `${total} (${parts[0]?.[0]})`;
  return `${total} (${parts.map(([name, value]) => `${name} ${value}`).join(', ')})`;
}

const ms = (seconds: number, count: number) => `${((seconds / count) * 1000).toFixed(1)} ms`;

/**
 * A meter for an engine, and a short summary of what that engine's instruments counted: a line
 * per instrument, its total and a breakdown by series (the unfinished-key gauges left out).
 */
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
        if (name.startsWith('chargeonce.keys.')) continue;
        if (metric.dataPointType === DataPointType.HISTOGRAM) {
          const groups = new Map<string, { count: number; sum: number }>();
          for (const point of metric.dataPoints) {
            const group = label(point.attributes, OUTCOME_ATTRIBUTES);
            const g = groups.get(group) ?? { count: 0, sum: 0 };
            g.count += point.value.count;
            g.sum += point.value.sum ?? 0;
            groups.set(group, g);
          }
          const all = [...groups.values()].reduce(
            (t, g) => ({ count: t.count + g.count, sum: t.sum + g.sum }),
            { count: 0, sum: 0 },
          );
          if (all.count === 0) continue;
          const parts = [...groups.entries()]
            .filter(([, g]) => g.count > 0)
            .map(([group, g]): [string, string] => [group, `${g.count} × ${ms(g.sum, g.count)}`]);
          lines.push(
            `${name}: ${breakdown(`${all.count} × mean ${ms(all.sum, all.count)}`, parts)}`,
          );
          continue;
        }
        // Counters. Replays are told apart by an attribute: summed on their own, at the end.
        let total = 0;
        let replayed = 0;
        const series = new Map<string, number>();
        for (const point of metric.dataPoints as DataPoint<number>[]) {
          total += point.value;
          if (point.attributes['chargeonce.replayed'] === true) replayed += point.value;
          const group = label(point.attributes, new Set(['chargeonce.replayed']));
          series.set(group, (series.get(group) ?? 0) + point.value);
        }
        if (total === 0) continue;
        const parts = [...series.entries()]
          .filter(([, value]) => value > 0)
          .map(([group, value]): [string, string] => [group, String(value)]);
        const line = breakdown(String(total), parts);
        lines.push(`${name}: ${replayed > 0 ? `${line}, ${replayed} of them replays` : line}`);
      }
      return lines;
    },
  };
}
