import { InvalidConfigurationError } from '../errors.js';
import { isPostgresUrl } from '../store/resolvePool.js';

// The options of createChargeEngine that are checked by kind, not by value: each refused when
// the engine is made, naming the option, rather than failing at the first call (after money
// moved, for a hook).

/** A pool given as a string must be a connection string `createEnginePool` can use. */
export function checkPoolString(pool: unknown): void {
  if (typeof pool === 'string' && !isPostgresUrl(pool)) {
    // The message never repeats the connection string: it may hold a password.
    throw new InvalidConfigurationError(
      'pool, given as a string, must be a PostgreSQL connection string of the form postgres://user:password@host:port/database (or pass a node-postgres Pool or a slonik pool)',
      { cause: new TypeError('not a postgres:// or postgresql:// URL') },
    );
  }
}

/**
 * The hooks of a charge, and the same three of a refund or capture, under `refund` and
 * `capture`.
 */
const PHASE_HOOKS = ['reserve', 'complete', 'cancel'] as const;
const MOVEMENT_HOOK_GROUPS = ['refund', 'capture'] as const;

/** What a value is, for a message: never a string's or a function's text (it may be a secret). */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * A hook that is not a function would fail only when it is called, after money moved; a hook
 * under a misspelt name would never run. Both are refused here. Absent (`undefined` or `null`)
 * means no hook, as the engine reads it.
 */
export function checkHooks(hooks: unknown): void {
  if (hooks === undefined || hooks === null) return;
  checkHookGroup('hooks', hooks, [...PHASE_HOOKS, ...MOVEMENT_HOOK_GROUPS]);
  const group = hooks as Record<string, unknown>;
  for (const name of PHASE_HOOKS) checkHook(`hooks.${name}`, group[name]);
  for (const kind of MOVEMENT_HOOK_GROUPS) {
    const movement = group[kind];
    if (movement === undefined || movement === null) continue;
    checkHookGroup(`hooks.${kind}`, movement, PHASE_HOOKS);
    for (const name of PHASE_HOOKS) {
      checkHook(`hooks.${kind}.${name}`, (movement as Record<string, unknown>)[name]);
    }
  }
}

function checkHookGroup(path: string, group: unknown, known: readonly string[]): void {
  if (typeof group !== 'object' || group === null || Array.isArray(group)) {
    throw new InvalidConfigurationError(
      `${path} must be an object of hook functions (${known.join(', ')}), got ${kindOf(group)}`,
    );
  }
  const unknown = Object.keys(group).find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw new InvalidConfigurationError(
      `${path}.${unknown} is not a hook: ${path} takes ${known.join(', ')}`,
    );
  }
}

function checkHook(path: string, hook: unknown): void {
  if (hook !== undefined && hook !== null && typeof hook !== 'function') {
    throw new InvalidConfigurationError(`${path} must be a function, got ${kindOf(hook)}`);
  }
}

export function checkGroupCommit(groupCommit: unknown): void {
  if (groupCommit !== undefined && groupCommit !== null && typeof groupCommit !== 'boolean') {
    throw new InvalidConfigurationError(
      `groupCommit must be true or false, got ${kindOf(groupCommit)}`,
    );
  }
}

export function checkTelemetry(telemetry: unknown): void {
  if (telemetry === undefined || telemetry === null || telemetry === false) return;
  if (typeof telemetry !== 'object' || Array.isArray(telemetry)) {
    throw new InvalidConfigurationError(
      `telemetry must be false or an object ({ tracer, meter, recordKeys }), got ${kindOf(telemetry)}`,
    );
  }
  const { tracer, meter, recordKeys } = telemetry as Record<string, unknown>;
  checkInstrumentSource('tracer', tracer);
  checkInstrumentSource('meter', meter);
  if (recordKeys !== undefined && recordKeys !== null && typeof recordKeys !== 'boolean') {
    throw new InvalidConfigurationError(
      `telemetry.recordKeys must be true or false, got ${kindOf(recordKeys)}`,
    );
  }
}

/** What a Tracer and a Meter must have, and how one is had from its provider. */
const INSTRUMENT_SOURCES = {
  tracer: {
    type: 'Tracer',
    methods: ['startSpan'],
    from: "tracerProvider.getTracer('chargeonce')",
  },
  meter: {
    type: 'Meter',
    methods: [
      'createCounter',
      'createHistogram',
      'createObservableGauge',
      'addBatchObservableCallback',
    ],
    from: "meterProvider.getMeter('chargeonce')",
  },
} as const;

/**
 * `telemetry.tracer` or `.meter`: absent, or an object with the methods the engine calls. A
 * provider passed for its tracer or meter (an easy slip: both are objects) is named as such;
 * taken, it would fail every call's telemetry, or every call.
 */
function checkInstrumentSource(name: 'tracer' | 'meter', value: unknown): void {
  if (value === undefined || value === null) return;
  const { type, methods, from } = INSTRUMENT_SOURCES[name];
  const fields = typeof value === 'object' ? (value as Record<string, unknown>) : null;
  if (fields && methods.every((method) => typeof fields[method] === 'function')) return;
  const provider =
    fields && typeof fields[name === 'tracer' ? 'getTracer' : 'getMeter'] === 'function';
  throw new InvalidConfigurationError(
    provider
      ? `telemetry.${name} must be an OpenTelemetry ${type}, got its provider: pass ${from}`
      : `telemetry.${name} must be an OpenTelemetry ${type} object (with ${methods.join(', ')}), got ${kindOf(value)}`,
  );
}
