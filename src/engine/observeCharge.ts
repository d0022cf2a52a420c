import type { Attributes } from '@opentelemetry/api';
import { errorType } from '../observability/observer.js';
import type { EngineEnv } from './engineEnv.js';
import type { ChargeOutcome } from './types.js';

/** The attributes every span of one charge carries: never the request's amounts or metadata. */
export function chargeAttributes(
  env: EngineEnv,
  scoped: { merchantId: string; key: string },
): Attributes {
  const attributes: Attributes = {
    'chargeonce.merchant_id': scoped.merchantId,
    'chargeonce.operation': env.operation,
  };
  if (env.observer.recordKeys) attributes['chargeonce.key'] = scoped.key;
  return attributes;
}

/**
 * One `processCharge` under its span (`chargeonce.process_charge`), with its outcome counted and
 * its end-to-end duration recorded (with the error code when it failed).
 */
export async function observeCharge(
  env: EngineEnv,
  scoped: { merchantId: string; key: string },
  run: () => Promise<ChargeOutcome>,
): Promise<ChargeOutcome> {
  const { observer } = env;
  const instruments = observer.instruments;
  const startedAt = performance.now();
  const attributes = chargeAttributes(env, scoped);
  try {
    const outcome = await observer.span('chargeonce.process_charge', attributes, async (span) => {
      const answered = await run();
      span?.setAttributes({
        'chargeonce.outcome.status': answered.status,
        'chargeonce.replayed': answered.replayed,
      });
      return answered;
    });
    if (instruments) {
      instruments.outcome({
        status: outcome.status,
        replayed: outcome.replayed,
        operation: env.operation,
      });
      instruments.processDuration((performance.now() - startedAt) / 1000, {
        'chargeonce.operation': env.operation,
        'chargeonce.outcome.status': outcome.status,
      });
    }
    return outcome;
  } catch (error) {
    instruments?.processDuration((performance.now() - startedAt) / 1000, {
      'chargeonce.operation': env.operation,
      'error.type': errorType(error),
    });
    throw error;
  }
}

/** Runs one phase's database work under its span, recording its duration. */
export async function observePhase<T>(
  env: EngineEnv,
  phase: 'claim' | 'complete',
  scoped: { merchantId: string; key: string },
  work: () => Promise<T>,
): Promise<T> {
  const startedAt = performance.now();
  try {
    return await env.observer.span(
      `chargeonce.${phase}`,
      {
        ...chargeAttributes(env, scoped),
        'db.system.name': 'postgresql',
        'db.collection.name': 'idempotency_keys',
        'db.operation.name': phase === 'claim' ? 'INSERT' : 'UPDATE',
      },
      work,
    );
  } finally {
    env.observer.instruments?.phaseDuration((performance.now() - startedAt) / 1000, phase);
  }
}
