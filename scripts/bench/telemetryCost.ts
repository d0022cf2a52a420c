// What a call's telemetry costs in Node CPU, part by part, without a database: the observed path
// of a replay (the same functions processCharge runs for one: its call, its claim phase, its
// `replayed` event) or of a fresh charge (its call, claim, `claimed` event, provider call and
// completion), with telemetry off, with chargeonce's own bookkeeping only (a meter whose
// instruments do nothing), with the OpenTelemetry SDK's meter, its tracer, both, and both with
// one trace in ten sampled (`sampled`: see headSampler). Run it as
//
//   npx tsx scripts/bench/telemetryCost.ts [--scenario replay|fresh] [--calls 200000] [--rounds 5]
//                                          [--batch-size 512]
//
// (`--batch-size`: how many spans the batch span processor exports at once, its default 512.)
// Each mode runs in a process of its own (a context manager, once it has run something, puts
// promise hooks on every promise of the process for good), round after round, the modes
// interleaved; it prints the median CPU and garbage-collection time per call of each, and what
// each adds to `off`. The end-to-end throughput with and without an SDK is `npm run bench`'s
// `engine-otel`; this says where that difference goes.
import { execFileSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import {
  noteAdopted,
  noteAttempt,
  observeOperation,
  observePhase,
  observeProvider,
} from '../../src/engine/observeCharge.js';
import type { EngineEnv } from '../../src/engine/engineEnv.js';
import { createObserver, type TelemetryOptions } from '../../src/observability/observer.js';
import { OnDemandMetricReader } from '../support/onDemandMetricReader.js';
import { idleMeter } from './idleMeter.js';
import { SAMPLED_SHARE, headSampler } from './headSampler.js';
import { median } from './stats.js';

const MODES = ['off', 'bookkeeping', 'meter', 'tracer', 'full', 'sampled'] as const;
type Mode = (typeof MODES)[number];

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '5' },
    mode: { type: 'string' },
    scenario: { type: 'string', default: 'replay' },
    'batch-size': { type: 'string', default: '512' },
  },
});
const calls = Number(values.calls);
const scenario = values.scenario;
if (scenario !== 'replay' && scenario !== 'fresh') throw new Error('--scenario is replay or fresh');

/** Callers at a time, as the bench's concurrency 8. */
const CONCURRENCY = 8;

/** Exports nothing, successfully, as the bench's `engine-otel` does. */
const discardingExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

/** The telemetry options of `mode`, with an SDK set up as `engine-otel`'s where it has one. */
function telemetryOf(mode: Mode): TelemetryOptions | false {
  if (mode === 'off') return false;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const tracerProvider = new BasicTracerProvider({
    ...(mode === 'sampled' ? { sampler: headSampler(SAMPLED_SHARE) } : {}),
    spanProcessors: [
      new BatchSpanProcessor(discardingExporter, {
        maxExportBatchSize: Number(values['batch-size']),
      }),
    ],
  });
  const meter = new MeterProvider({ readers: [new OnDemandMetricReader()] }).getMeter('chargeonce');
  const tracer = tracerProvider.getTracer('chargeonce');
  switch (mode) {
    case 'bookkeeping':
      return { meter: idleMeter };
    case 'meter':
      return { meter };
    case 'tracer':
      return { tracer, meter: idleMeter };
    case 'full':
    case 'sampled':
      return { tracer, meter };
  }
}

/** One mode's round, in this process: CPU and GC time per call, in nanoseconds. */
async function measure(mode: Mode): Promise<{ cpuNs: number; gcNs: number }> {
  const observer = await createObserver({ telemetry: telemetryOf(mode) });
  const env = { observer, hooks: {}, separateClaim: false } as unknown as EngineEnv;
  const call = scenario === 'replay' ? replayOf(env) : freshChargeOf(env);
  const batch = Array.from({ length: CONCURRENCY }, (_, j) => j);
  const run = async (n: number) => {
    for (let i = 0; i < n; i += CONCURRENCY) {
      await Promise.all(batch.map((j) => call(i + j)));
      // A turn of the event loop between batches, as a database answer would take.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  await run(Math.min(calls, 20_000)); // warm-up: compiled, and the SDK's series made
  let gcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  gc.observe({ entryTypes: ['gc'] });
  const before = process.cpuUsage();
  await run(calls);
  const spent = process.cpuUsage(before);
  await new Promise((resolve) => setImmediate(resolve)); // the last GC entries delivered
  gc.disconnect();
  return { cpuNs: ((spent.user + spent.system) * 1000) / calls, gcNs: (gcMs * 1e6) / calls };
}

/** The `i`th call's key: a thousand or so, as many series as a busy merchant's keys. */
const scopedKey = (i: number) => ({
  merchantId: 'merchant_1',
  operation: 'charge',
  key: `key-${i % 1024}`,
});

/** A replay as processCharge observes it: the call, its claim (found completed), the event. */
function replayOf(env: EngineEnv): (i: number) => Promise<unknown> {
  const stored = { status: 'succeeded', replayed: true };
  return (i) => {
    const scoped = scopedKey(i);
    return observeOperation(env, 'chargeonce.process_charge', scoped, async () => {
      const outcome = await observePhase(
        env,
        'claim',
        scoped,
        () => Promise.resolve(stored),
        undefined,
        () => true,
      );
      env.observer.event({
        type: 'replayed',
        ...scoped,
        chargeId: 'ch_1',
        status: 'succeeded',
        httpStatus: 201,
      });
      return outcome;
    });
  };
}

/**
 * A fresh charge as processCharge observes it: the call, its claim, the `claimed` event and the
 * attempt noted, the provider's charge, the completion.
 */
function freshChargeOf(env: EngineEnv): (i: number) => Promise<unknown> {
  const charged = { status: 'succeeded', replayed: false };
  return (i) => {
    const scoped = scopedKey(i);
    return observeOperation(env, 'chargeonce.process_charge', scoped, async () => {
      await observePhase(env, 'claim', scoped, () => Promise.resolve({ kind: 'claimed' }));
      env.observer.event({ type: 'claimed', ...scoped, chargeId: 'ch_1', from: 'new', attempt: 1 });
      noteAttempt(scoped, 'new', 1);
      await observeProvider(env, scoped, 'create', () => Promise.resolve({ id: 'py_1' }));
      noteAdopted(scoped, false);
      await observePhase(env, 'complete', scoped, () => Promise.resolve(true));
      return charged;
    });
  };
}

if (values.mode !== undefined) {
  const result = await measure(values.mode as Mode);
  process.stdout.write(JSON.stringify(result));
} else {
  const script = fileURLToPath(import.meta.url);
  const cpu = new Map<Mode, number[]>();
  const gc = new Map<Mode, number[]>();
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const mode of MODES) {
      const out = execFileSync(
        process.execPath,
        [
          ...process.execArgv,
          script,
          '--mode',
          mode,
          '--calls',
          String(calls),
          '--scenario',
          scenario,
          '--batch-size',
          values['batch-size'],
        ],
        { encoding: 'utf8' },
      );
      const { cpuNs, gcNs } = JSON.parse(out) as { cpuNs: number; gcNs: number };
      cpu.set(mode, [...(cpu.get(mode) ?? []), cpuNs]);
      gc.set(mode, [...(gc.get(mode) ?? []), gcNs]);
      console.log(
        `round ${round} ${mode.padEnd(12)} ${cpuNs.toFixed(0).padStart(6)} ns/call (GC ${gcNs.toFixed(0)})`,
      );
    }
  }
  const off = median(cpu.get('off') ?? []);
  console.log(
    `\nThe observed path of a ${scenario === 'replay' ? 'replay' : 'fresh charge'} at concurrency ${CONCURRENCY}, median of rounds (ns per call):`,
  );
  for (const mode of MODES) {
    const m = median(cpu.get(mode) ?? []);
    const added = mode === 'off' ? '' : `  adds ${(m - off).toFixed(0)}`;
    console.log(
      `  ${mode.padEnd(12)} ${m.toFixed(0).padStart(6)}  GC ${median(gc.get(mode) ?? [])
        .toFixed(0)
        .padStart(5)}${added}`,
    );
  }
}
