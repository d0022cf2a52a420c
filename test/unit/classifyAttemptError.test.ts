import { describe, expect, it } from 'vitest';
import { classifyAttemptError } from '../../src/chaos/classifyAttemptError.js';
import { ProviderUnavailableError, StoreUnavailableError } from '../../src/errors.js';

/** A PostgreSQL error as node-postgres gives it: an Error with its SQLSTATE as `code`. */
const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

describe("the chaos client's reading of a retryable error", () => {
  it('tells a lock wait cut short apart from the store out of reach', () => {
    const cut = new StoreUnavailableError({ cause: pgError('55P03') });
    const down = new StoreUnavailableError({ cause: pgError('08006') });

    expect(classifyAttemptError(cut)).toMatchObject({
      kind: 'retry',
      event: { kind: 'retryable', code: 'store_unavailable:lock_wait' },
    });
    expect(classifyAttemptError(down)).toMatchObject({
      event: { kind: 'retryable', code: 'store_unavailable' },
    });
  });

  it('keeps the code of any other retryable error', () => {
    const provider = new ProviderUnavailableError(1_000, { cause: pgError('55P03') });

    expect(classifyAttemptError(provider)).toMatchObject({
      event: { kind: 'retryable', code: 'provider_unavailable' },
    });
  });
});
