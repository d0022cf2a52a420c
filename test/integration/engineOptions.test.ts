import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import {
  createChargeEngine,
  InvalidConfigurationError,
  type ChargeEngineOptions,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

// Options of the wrong type are refused when the engine is made, naming the option, rather than
// taken silently (or failing at the first charge).

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

function refusalOf(options: Record<string, unknown>): unknown {
  try {
    createChargeEngine({ pool: db.pgPool, provider: createFakeProvider(), ...options });
  } catch (error) {
    return error;
  }
  return null;
}

describe('option types are checked when the engine is made', () => {
  it.each([
    ['groupCommit a string', { groupCommit: 'no' }, 'groupCommit must be true or false'],
    ['groupCommit a number', { groupCommit: 0 }, 'groupCommit must be true or false'],
    ['telemetry a number', { telemetry: 42 }, 'telemetry must be false or an object'],
    ['telemetry true', { telemetry: true }, 'telemetry must be false or an object'],
    ['telemetry a string', { telemetry: 'on' }, 'telemetry must be false or an object'],
    [
      'telemetry.recordKeys a string',
      { telemetry: { recordKeys: 'yes' } },
      'telemetry.recordKeys must be true or false',
    ],
    ['telemetry.tracer a string', { telemetry: { tracer: 'otel' } }, 'telemetry.tracer must be'],
    ['telemetry.meter a number', { telemetry: { meter: 1 } }, 'telemetry.meter must be'],
    [
      'a TracerProvider as telemetry.tracer',
      { telemetry: { tracer: new BasicTracerProvider() } },
      "telemetry.tracer must be an OpenTelemetry Tracer, got its provider: pass tracerProvider.getTracer('chargeonce')",
    ],
    [
      'a MeterProvider as telemetry.meter',
      { telemetry: { meter: new MeterProvider() } },
      "telemetry.meter must be an OpenTelemetry Meter, got its provider: pass meterProvider.getMeter('chargeonce')",
    ],
    [
      'a meter without gauges',
      { telemetry: { meter: { createCounter() {}, createHistogram() {} } } },
      'telemetry.meter must be an OpenTelemetry Meter object (with createCounter, createHistogram, createObservableGauge, addBatchObservableCallback), got an object',
    ],
  ])('refuses %s', (_name, options, message) => {
    const error = refusalOf(options);
    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect((error as Error).message).toContain(message);
  });

  it.each<[string, Partial<ChargeEngineOptions>]>([
    ['groupCommit false', { groupCommit: false }],
    ['groupCommit true', { groupCommit: true }],
    ['telemetry false', { telemetry: false }],
    ['telemetry with recordKeys', { telemetry: { recordKeys: true } }],
    ['telemetry empty', { telemetry: {} }],
  ])('takes %s and charges', async (_name, options) => {
    const engine = createChargeEngine({
      pool: db.pgPool,
      provider: createFakeProvider(),
      ...options,
    });
    await expect(engine.processCharge(aKey(), aRequest())).resolves.toMatchObject({
      status: 'succeeded',
    });
    await engine.close();
  });
});
