import { describe, expect, it } from 'vitest';
import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  type Sampler,
  type SamplingResult,
} from '@opentelemetry/sdk-trace-base';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { useTelemetrySdk } from '../support/telemetrySdk.js';
import { aKey, aRequest } from '../support/charges.js';

// A head sampler that drops a call: the call's steps start no spans (none would be recorded),
// and every metric point of the call is still recorded.

const sdk = useTelemetrySdk();
const TRACED_MERCHANT = 'm_sampled_in';

/**
 * Records the roots of one merchant's calls only, counts every span the tracer is asked for, and
 * keeps the attributes each root was decided on.
 */
function merchantSampler(): Sampler & { asked: number; rootAttributes: Attributes[] } {
  const rootAttributes: Attributes[] = [];
  const root: Sampler = {
    shouldSample: (_c: Context, _t: string, _n: string, _k: SpanKind, attributes: Attributes) => {
      rootAttributes.push({ ...attributes });
      return {
        decision:
          attributes['chargeonce.merchant_id'] === TRACED_MERCHANT
            ? SamplingDecision.RECORD_AND_SAMPLED
            : SamplingDecision.NOT_RECORD,
      };
    },
    toString: () => 'merchantSampler',
  };
  const parentBased = new ParentBasedSampler({ root });
  const counting = {
    asked: 0,
    rootAttributes,
    shouldSample(
      context: Context,
      traceId: string,
      name: string,
      kind: SpanKind,
      attributes: Attributes,
      links: Link[],
    ): SamplingResult {
      counting.asked += 1;
      return parentBased.shouldSample(context, traceId, name, kind, attributes, links);
    },
    toString: () => 'counting',
  };
  return counting;
}

function sampledEngine() {
  const spans = new InMemorySpanExporter();
  const sampler = merchantSampler();
  const tracerProvider = new BasicTracerProvider({
    sampler,
    spanProcessors: [new SimpleSpanProcessor(spans)],
  });
  const engine = createChargeEngine({
    pool: sdk.db.pgPool,
    provider: createFakeProvider(),
    telemetry: { tracer: tracerProvider.getTracer('test'), meter: sdk.meter() },
  });
  return { engine, spans, sampler };
}

describe('OpenTelemetry with a head sampler', () => {
  it('a sampled-out charge starts its own span only, and records every metric point', async () => {
    const { engine, spans, sampler } = sampledEngine();

    await engine.processCharge(aKey(), aRequest({ merchantId: 'm_sampled_out' }));
    await engine.close();

    expect(spans.getFinishedSpans()).toEqual([]);
    // The call's span alone was asked for: not one for the claim, the provider, the completion.
    expect(sampler.asked).toBe(1);
    expect(await sdk.sum('chargeonce.charges', { 'chargeonce.outcome.status': 'succeeded' })).toBe(
      1,
    );
    for (const phase of ['claim', 'complete']) {
      expect(
        await sdk.histogramCount('chargeonce.phase.duration', { 'chargeonce.phase': phase }),
        phase,
      ).toBe(1);
    }
    expect(
      await sdk.histogramCount('chargeonce.provider.duration', {
        'chargeonce.provider.call': 'create',
      }),
    ).toBe(1);
    expect(await sdk.histogramCount('chargeonce.process_charge.duration')).toBe(1);
  });

  it('a sampled-in charge keeps its children and, set after the decision, what it learnt', async () => {
    const { engine, spans, sampler } = sampledEngine();

    await engine.processCharge(aKey(), aRequest({ merchantId: TRACED_MERCHANT }));
    await engine.close();

    // The sampler decided on what a call knows as it starts, as for a span started in real time.
    expect(sampler.rootAttributes).toEqual([
      { 'chargeonce.merchant_id': TRACED_MERCHANT, 'chargeonce.operation': 'charge' },
    ]);
    const root = spans.getFinishedSpans().find((s) => s.name === 'chargeonce.process_charge');
    expect(root?.attributes).toMatchObject({
      'chargeonce.merchant_id': TRACED_MERCHANT,
      'chargeonce.outcome.status': 'succeeded',
      'chargeonce.recovery_point': 'new',
      'chargeonce.adopted': false,
    });

    const names = spans.getFinishedSpans().map((span) => span.name);
    expect(names.sort()).toEqual(
      [
        'chargeonce.claim',
        'chargeonce.complete',
        'chargeonce.process_charge',
        'chargeonce.provider.create',
      ].sort(),
    );
  });
});
