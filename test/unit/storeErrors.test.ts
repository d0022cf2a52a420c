import { describe, expect, it } from 'vitest';
import {
  IdempotencyKeyInUseError,
  SchemaNotMigratedError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { readdir, readFile } from 'node:fs/promises';
import {
  LATER_COLUMNS,
  isOutOfReach,
  isRetryableStoreError,
  toStoreError,
  withStore,
} from '../../src/store/storeErrors.js';

const withCode = (code: string, message = 'driver error') =>
  Object.assign(new Error(message), { code });

describe('store error classification', () => {
  it.each([
    '08006',
    '08001',
    '57P01',
    '57P02',
    '57P03',
    '53300',
    '57014',
    '25006',
    '55P03',
    '58030',
    'ECONNREFUSED',
    'ECONNRESET',
  ])('%s means the store is unavailable', (code) => {
    const mapped = toStoreError(withCode(code));
    expect(mapped).toBeInstanceOf(StoreUnavailableError);
    expect((mapped as StoreUnavailableError).cause).toBeInstanceOf(Error);
  });

  it.each(['40001', '40P01'])('%s is retryable, and transient once retries ran out', (code) => {
    expect(isRetryableStoreError(withCode(code))).toBe(true);
    expect(toStoreError(withCode(code))).toBeInstanceOf(StoreUnavailableError);
  });

  it.each(['08006', '57P01', '53300', 'ECONNREFUSED'])(
    '%s is out of reach: a batch that met it fails every call in it',
    (code) => expect(isOutOfReach(new Error('batch', { cause: withCode(code) }))).toBe(true),
  );

  it.each(['57014', '55P03', '40P01', '23505'])(
    '%s is not out of reach: a batch that met it goes again call by call',
    (code) => expect(isOutOfReach(new Error('batch', { cause: withCode(code) }))).toBe(false),
  );

  it('finds the code on a wrapped cause', () => {
    const wrapped = new Error('query failed', { cause: withCode('57P01') });
    expect(toStoreError(wrapped)).toBeInstanceOf(StoreUnavailableError);
  });

  it('leaves other errors alone', () => {
    // A statement sent with the wrong number of values: a mistake, not an outage.
    const protocol = withCode(
      '08P01',
      'bind message supplies 0 parameters, but prepared statement "" requires 1',
    );
    expect(toStoreError(protocol)).toBe(protocol);
    const unique = withCode('23505', 'duplicate key');
    expect(toStoreError(unique)).toBe(unique);
    expect(isRetryableStoreError(unique)).toBe(false);
    const own = new IdempotencyKeyInUseError(100);
    expect(toStoreError(own)).toBe(own);
  });

  it.each([
    ['3F000', 'schema "payments" does not exist', 'payments'],
    ['42P01', 'relation "chargeonce.idempotency_keys" does not exist', 'chargeonce'],
    ['42P01', 'relation "chargeonce.schema_migrations" does not exist', 'chargeonce'],
  ])('%s "%s" means the schema is not migrated', (code, message, schema) => {
    const cause = withCode(code, message);
    const mapped = toStoreError(new Error('query failed', { cause }));
    expect(mapped).toBeInstanceOf(SchemaNotMigratedError);
    expect(mapped).toMatchObject({ code: 'schema_not_migrated', httpStatus: 500, schema });
    expect((mapped as SchemaNotMigratedError).message).toContain(
      `migrate(pool, { schema: '${schema}' })`,
    );
    expect((mapped as SchemaNotMigratedError).cause).toBeInstanceOf(Error);
  });

  it.each([
    ['42P01', 'relation "public.stock_reservations" does not exist'],
    ['42P01', 'relation "stock" does not exist'],
    ['42883', 'function public.reserve_stock(uuid) does not exist'],
    ['42883', 'operator does not exist: text = uuid'],
  ])("leaves %s about someone else's object alone: %s", (code, message) => {
    const error = withCode(code, message);
    expect(toStoreError(error)).toBe(error);
  });
});

describe('a column a later migration adds, missing', () => {
  it.each([
    'column "sweeps" does not exist',
    'column k.sweeps does not exist',
    'column "has_waiters" of relation "idempotency_keys" does not exist',
  ])('"%s" means the schema is behind: SchemaNotMigratedError', (message) => {
    expect(toStoreError(withCode('42703', message))).toBeInstanceOf(SchemaNotMigratedError);
  });

  it("leaves someone else's missing column alone", () => {
    const theirs = withCode('42703', 'column "stock_left" does not exist');
    expect(toStoreError(theirs)).toBe(theirs);
  });

  it('names every column the migrations add after the first', async () => {
    const folder = new URL('../../migrations/', import.meta.url);
    const added = new Set<string>();
    for (const file of await readdir(folder)) {
      const text = await readFile(new URL(file, folder), 'utf8');
      for (const match of text.matchAll(/ADD COLUMN (?:IF NOT EXISTS )?"?(\w+)"?/gi)) {
        added.add(match[1] as string);
      }
    }
    expect([...LATER_COLUMNS].sort()).toEqual([...added].sort());
  });
});

describe('withStore', () => {
  it('answers what the operation answers', async () => {
    await expect(withStore(() => Promise.resolve('row'))).resolves.toBe('row');
  });

  it('turns a lost connection into StoreUnavailableError, whether rejected or thrown at once', async () => {
    const rejectedCall = withStore(() => Promise.reject(withCode('ECONNRESET')));
    await expect(rejectedCall).rejects.toBeInstanceOf(StoreUnavailableError);
    // A synchronous throw must reach the caller as a rejection, never as a throw from withStore.
    let thrownCall: Promise<unknown> | undefined;
    expect(() => {
      thrownCall = withStore(() => {
        throw withCode('57P01');
      });
    }).not.toThrow();
    await expect(thrownCall).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('passes on other errors unchanged', async () => {
    const other = new RangeError('not a store error');
    await expect(withStore(() => Promise.reject(other))).rejects.toBe(other);
  });
});
