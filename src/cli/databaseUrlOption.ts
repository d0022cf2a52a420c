import { isPostgresUrl } from '../store/resolvePool.js';
import { UsageError } from './parseCommandArgs.js';

/**
 * `--database-url`, else `DATABASE_URL`, or undefined when neither is set; checked before anything
 * connects, so that a value that is not a PostgreSQL URL is refused in the words of the option the
 * user gave, not those of the engine's `pool`.
 */
export function optionalDatabaseUrl(
  flag: string | undefined,
  command: string | undefined,
): string | undefined {
  const url = flag ?? process.env.DATABASE_URL;
  if (!url) return undefined;
  if (!isPostgresUrl(url)) {
    throw new UsageError(
      `${flag !== undefined ? '--database-url' : 'DATABASE_URL'} must be a PostgreSQL ` +
        'connection string of the form postgres://user:password@host:port/database',
      command,
    );
  }
  return url;
}

/** As `optionalDatabaseUrl`, for a command that cannot run without one. */
export function databaseUrlOption(flag: string | undefined, command: string | undefined): string {
  const url = optionalDatabaseUrl(flag, command);
  if (!url) throw new UsageError('--database-url (or DATABASE_URL) is required', command);
  return url;
}
