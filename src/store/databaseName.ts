import type { PgPoolLike } from './pgPoolLike.js';

/**
 * The name of the database a node-postgres pool connects to, as its settings say (`database`,
 * or the path of its `connectionString`); null when they do not say (the server's default is
 * then the user's name, which it would take a round trip to learn).
 */
export function databaseNameOf(pool: PgPoolLike | null): string | null {
  const options = pool?.options as { database?: unknown; connectionString?: unknown } | undefined;
  if (typeof options?.database === 'string' && options.database !== '') return options.database;
  if (typeof options?.connectionString !== 'string') return null;
  try {
    const name = decodeURIComponent(new URL(options.connectionString).pathname.slice(1));
    return name === '' ? null : name;
  } catch {
    return null;
  }
}
