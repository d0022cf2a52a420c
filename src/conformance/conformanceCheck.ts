import { ProviderTransientError } from '../provider/PaymentProvider.js';

/** A check of the conformance battery did not hold; its message is the check's detail. */
export class CheckFailed extends Error {}

/** Fails the running check with `message` unless `condition` holds. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

/** A provider's answer, for a check's detail. */
export function describeAnswer(answer: unknown): string {
  return JSON.stringify(answer) ?? String(answer);
}

/** An error, for a check's detail. */
export function describeError(error: unknown): string {
  if (error instanceof ProviderTransientError) return `ProviderTransientError(${error.reason})`;
  if (error instanceof Error) {
    return `${error.name}: ${error.message.replace(/\s+/g, ' ').slice(0, 200)}`;
  }
  return String(error);
}
