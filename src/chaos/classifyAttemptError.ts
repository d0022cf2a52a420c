import type { CrashPoint } from '../engine/types.js';
import {
  ChargeNeedsAttentionError,
  ChargeOnceError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SimulatedCrashError,
  StoreUnavailableError,
} from '../errors.js';
import { anyCause, codeOf } from '../store/storeErrors.js';
import type { TerminalStatus } from './OperationSink.js';

/** What a chaos client makes of an error `processCharge` threw. */
export type ClassifiedError =
  | {
      kind: 'retry';
      event: { kind: 'crash'; point: CrashPoint } | { kind: 'retryable'; code: string };
      retryAfterMs: number | null;
    }
  | { kind: 'terminal'; status: TerminalStatus; code: string }
  | { kind: 'unexpected'; code: string; message: string };

/** The retryable outcomes of the issue: in use (409), provider or store unavailable (503), a crash. */
export function classifyAttemptError(error: unknown): ClassifiedError {
  if (error instanceof SimulatedCrashError) {
    return {
      kind: 'retry',
      event: { kind: 'crash', point: error.point as CrashPoint },
      retryAfterMs: null,
    };
  }
  if (
    error instanceof IdempotencyKeyInUseError ||
    error instanceof ProviderUnavailableError ||
    error instanceof StoreUnavailableError
  ) {
    return {
      kind: 'retry',
      event: { kind: 'retryable', code: retryableCode(error) },
      retryAfterMs: error.retryAfterMs,
    };
  }
  // The adapter refused an answer it could not parse: the key stays at `reserved`, and a retry
  // asks the provider again.
  if (error instanceof ProviderError) {
    return { kind: 'retry', event: { kind: 'retryable', code: error.code }, retryAfterMs: null };
  }
  // The engine refused the provider's answer and parked the key: settled, for a person.
  if (error instanceof ProviderAnswerInvalidError || error instanceof ChargeNeedsAttentionError) {
    return { kind: 'terminal', status: 'parked', code: error.code };
  }
  if (error instanceof IdempotencyKeyExpiredError) {
    return { kind: 'terminal', status: 'expired', code: error.code };
  }
  if (error instanceof ChargeOnceError) {
    return { kind: 'unexpected', code: error.code, message: error.message };
  }
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  return { kind: 'unexpected', code: name, message };
}

/**
 * The error's code; a store error that was a lock wait cut short (a movement behind a sibling
 * that held its charge's row past `CHARGE_ROW_WAIT_MS`) apart from the store out of reach, so a
 * run's report shows the row's bound met.
 */
function retryableCode(error: ChargeOnceError): string {
  if (error instanceof StoreUnavailableError && anyCause(error, (e) => codeOf(e) === '55P03')) {
    return `${error.code}:lock_wait`;
  }
  return error.code;
}
