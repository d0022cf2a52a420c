import { describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/errors.js';
import { isKeyLockWait } from '../../src/store/keyLockWait.js';
import { markHookError } from '../../src/store/hookErrors.js';

/** A lock wait cut short, as node-postgres reports it. */
const lockTimeout = (where?: string) =>
  Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03', where });

describe('isKeyLockWait', () => {
  it("knows a wait on a key's row by the relation its context names, in any language", () => {
    expect(
      isKeyLockWait(
        lockTimeout('while inserting index tuple (0,2) in relation "idempotency_keys"'),
      ),
    ).toBe(true);
    // As a server with French messages words it: translated text, other quotes.
    expect(
      isKeyLockWait(
        lockTimeout(
          "lors de l'insertion de l'enregistrement d'index (0,2) dans la relation « idempotency_keys »",
        ),
      ),
    ).toBe(true);
    // Wrapped, as the store's errors carry it.
    const wrapped = new StoreUnavailableError({
      cause: lockTimeout('while updating tuple (0,1) in relation "idempotency_keys"'),
    });
    expect(isKeyLockWait(wrapped)).toBe(true);
  });

  it('leaves any other lock wait alone, unless any lock will do', () => {
    expect(isKeyLockWait(lockTimeout())).toBe(false);
    expect(isKeyLockWait(lockTimeout('while locking tuple (0,1) in relation "charges"'))).toBe(
      false,
    );
    expect(isKeyLockWait(lockTimeout(), true)).toBe(true);
    expect(isKeyLockWait(Object.assign(new Error('timeout'), { code: '57014' }), true)).toBe(false);
  });

  it("never takes a hook's own lock wait for a key's", () => {
    const hooks = markHookError(
      lockTimeout('while updating tuple (0,1) in relation "idempotency_keys"'),
    );
    expect(isKeyLockWait(hooks, true)).toBe(false);
    expect(isKeyLockWait(new StoreUnavailableError({ cause: hooks }))).toBe(false);
  });
});
