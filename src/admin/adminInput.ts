import { InvalidRequestError, type FieldIssue } from '../errors.js';
import { isValidIdempotencyKey } from '../idempotencyKey.js';
import { exactId, shortFieldName, UNKNOWN_FIELD_MESSAGE } from '../request.js';
import type { ScopedKey } from '../store/keyState.js';

/** An operation name, as the engine's `operation` option takes it. */
const OPERATION_NAME = /^[a-z][a-z0-9_.-]{0,62}$/;

/** The longest actor, reason or provider id stored. */
const MAX_TEXT = { id: 255, actor: 200, reason: 2_000 } as const;

/** Collects the issues of one admin call's input; `done()` throws them all at once, if any. */
export function inputIssues() {
  const issues: FieldIssue[] = [];
  return {
    issues,
    add(field: string, message: string) {
      issues.push({ field, message });
    },
    /**
     * A string of 1 to `max` characters that is not only whitespace; absent is allowed unless
     * `required`.
     */
    text(field: string, value: unknown, max: number, required: boolean): value is string {
      if (value === undefined || value === null) {
        if (required) issues.push({ field, message: 'is required' });
        return false;
      }
      if (typeof value !== 'string') {
        issues.push({ field, message: 'must be a string' });
        return false;
      }
      if (value.trim() === '' || value.length > max) {
        issues.push({ field, message: `must be 1 to ${max} characters, not only spaces` });
        return false;
      }
      return true;
    },
    /**
     * A provider's id or code, as `text`, and with no whitespace at either end: it is stored and
     * compared exactly (an id is recorded once per merchant), and sent to the provider as is, so
     * one pasted with a trailing space would be another id.
     */
    exactText(field: string, value: unknown, max: number, required: boolean): value is string {
      if (!this.text(field, value, max, required)) return false;
      if (value.trim() === value) return true;
      issues.push({ field, message: 'must not start or end with whitespace' });
      return false;
    },
    /**
     * An id as `processCharge` takes it (a merchant's): stored and compared exactly, so one with
     * a space at an edge (pasted) is refused here rather than reported as no such key.
     */
    id(field: string, value: unknown, required: boolean): value is string {
      if (value === undefined || value === null) {
        if (required) issues.push({ field, message: 'is required' });
        return false;
      }
      const parsed = exactId.safeParse(value);
      if (parsed.success) return true;
      issues.push({ field, message: parsed.error.issues[0]?.message ?? 'is not an id' });
      return false;
    },
    /**
     * Refuses every field of `input` not in `known`, as `processCharge` does: a JavaScript
     * caller's misspelt filter (`merchant` for `merchantId`) would otherwise widen a listing to
     * every merchant's keys, or make a key that exists read as no such key.
     */
    onlyKnown(input: unknown, known: ReadonlySet<string>) {
      if (typeof input !== 'object' || input === null) return;
      for (const field of Object.keys(input)) {
        if (!known.has(field)) {
          issues.push({ field: shortFieldName(field), message: UNKNOWN_FIELD_MESSAGE });
        }
      }
    },
    /** Throws `InvalidRequestError` naming every issue found: nothing was read or written. */
    done() {
      if (issues.length > 0) throw new InvalidRequestError(issues);
    },
  };
}

export type InputIssues = ReturnType<typeof inputIssues>;

/** The fields of every admin call that names one key. */
export const TARGET_FIELDS = ['merchantId', 'key', 'operation'] as const;

/** Checks an operation name, as given. */
export function checkOperation(issues: InputIssues, value: unknown): value is string {
  if (typeof value === 'string' && OPERATION_NAME.test(value)) return true;
  issues.add('operation', 'must be a short lower-case name, e.g. "charge"');
  return false;
}

/**
 * The key an admin call is about, with the engine's operation when none is given. Problems go to
 * `issues`: call `issues.done()` before using the result.
 */
export function readTarget(
  issues: InputIssues,
  target: unknown,
  defaultOperation: string,
): ScopedKey {
  const t = (typeof target === 'object' && target !== null ? target : {}) as Record<
    string,
    unknown
  >;
  issues.id('merchantId', t.merchantId, true);
  if (!isValidIdempotencyKey(t.key)) {
    issues.add('key', 'must be 1 to 255 printable ASCII characters');
  }
  const operation = t.operation ?? defaultOperation;
  checkOperation(issues, operation);
  return {
    merchantId: t.merchantId as string,
    key: t.key as string,
    operation: operation as string,
  };
}

export { MAX_TEXT };
