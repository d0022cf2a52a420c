import { recordPendingTelemetry } from './recordLater.js';
import type { Attributes, Meter, Observable } from '@opentelemetry/api';

/** One series of a counter: its attribute set, and an id as unique as the set. */
export type SeriesKey = { readonly id: string; readonly attributes: Attributes };

/** A counter that sums its adds here and hands them to the SDK when a reader collects. */
export type CoalescedCounter = {
  /** Adds `value` to `series` (made once and reused: see `attributeSets`). */
  add(value: number, series: SeriesKey): void;
};

/** Series kept per counter at most: past them, adds go to the SDK one by one. */
const MAX_SERIES = 1_000;

type Series = { attributes: Attributes; pending: number };

/**
 * Makes counters whose adds are summed in a map of their own, per attribute set, and handed to
 * the SDK's counter (one `add` per series) when a reader collects. The SDK sorts and serializes a
 * measurement's attributes on every `add`, a good part of what a replay's telemetry costs; here
 * an add is a map lookup and a sum. The instruments stay ordinary counters, with the same names,
 * attributes and values at every collection: the SDK runs the callbacks of observable instruments
 * (`collectOn`'s, where the flush is registered) before it reads the synchronous ones.
 */
export function createCoalescedCounters(
  meter: Meter,
  collectOn: Observable,
): (name: string, description: string) => CoalescedCounter {
  const flushes: (() => void)[] = [];
  meter.addBatchObservableCallback(() => {
    // What calls that ended moments ago left to record (see recordLater) is read with the rest.
    recordPendingTelemetry();
    for (const flush of flushes) flush();
  }, [collectOn]);

  return (name, description) => {
    const counter = meter.createCounter(name, { description });
    const series = new Map<string, Series>();
    flushes.push(() => {
      for (const s of series.values()) {
        if (s.pending === 0) continue;
        counter.add(s.pending, s.attributes);
        s.pending = 0;
      }
    });
    return {
      add(value, key) {
        const s = series.get(key.id);
        if (s) s.pending += value;
        else if (series.size < MAX_SERIES)
          series.set(key.id, { attributes: key.attributes, pending: value });
        else counter.add(value, key.attributes);
      },
    };
  };
}
