import {
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';

/**
 * The share of calls the bench's sampled designs trace: one in ten, as services at a charge's
 * volume commonly run tracing (metrics still count every call).
 */
export const SAMPLED_SHARE = 0.1;

/**
 * Head sampling as the SDK's own configuration gives it (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`):
 * a root span is recorded for `share` of the trace ids, and its children follow their parent.
 */
export function headSampler(share: number): Sampler {
  return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(share) });
}
