import { sql, type IdentifierSqlToken } from 'slonik';
import { InvalidConfigurationError } from '../errors.js';

/**
 * Escaped identifiers of chargeonce's tables and functions in one schema: the only thing ever
 * interpolated.
 */
export type Tables = {
  schema: string;
  keys: IdentifierSqlToken;
  charges: IdentifierSqlToken;
  /** Refunds and captures: money moved on a charge. */
  movements: IdentifierSqlToken;
  migrations: IdentifierSqlToken;
  /** The audit trail of what people did to keys (resolve, requeue). */
  adminActions: IdentifierSqlToken;
  /** How long each operation's engines promised to keep keys (see `retentionWindows`). */
  retentionWindows: IdentifierSqlToken;
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The default schema name. */
export const DEFAULT_SCHEMA = 'chargeonce';

/**
 * @throws {InvalidConfigurationError} when the schema name is not a plain lower-case identifier.
 */
export function tablesIn(schema: string = DEFAULT_SCHEMA): Tables {
  if (!SCHEMA_NAME.test(schema)) {
    throw new InvalidConfigurationError(
      `schema must match ${String(SCHEMA_NAME)}, got ${JSON.stringify(schema)}`,
    );
  }
  return {
    schema,
    keys: sql.identifier([schema, 'idempotency_keys']),
    charges: sql.identifier([schema, 'charges']),
    movements: sql.identifier([schema, 'movements']),
    migrations: sql.identifier([schema, 'schema_migrations']),
    adminActions: sql.identifier([schema, 'admin_actions']),
    retentionWindows: sql.identifier([schema, 'retention_windows']),
  };
}
