import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { createChargeEngine } from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createObserver } from '../../src/observability/observer.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

// The global tracer: nothing is built while no SDK is registered behind the API, and an SDK
// registered after the engine was made is used from the next call on.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  trace.disable();
  await db.drop();
});

describe('telemetry through the global API', () => {
  it('traces the calls made once an SDK registers, not those before', async () => {
    // No SDK: the observer says there is nothing to record, so the hot path builds nothing.
    const observer = await createObserver({});
    expect(observer.tracing).toBe(false);
    expect(observer.instruments).toBeNull();
    const engine = createChargeEngine({ pool: db.pgPool, provider: createFakeProvider() });
    const before = aKey();
    await engine.processCharge(before, aRequest());

    const spans = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    expect(observer.tracing).toBe(true);
    await engine.processCharge(aKey(), aRequest());
    await engine.processCharge(before, aRequest());

    const calls = spans.getFinishedSpans().filter((s) => s.name === 'chargeonce.process_charge');
    expect(calls.map((s) => s.attributes['chargeonce.replayed'])).toEqual([false, true]);
    expect(spans.getFinishedSpans().map((s) => s.name)).toContain('chargeonce.claim');
  });
});
