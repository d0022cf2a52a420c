import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/store/migrate.js';
import { adminQuery, dropDatabase, startPostgres, urlForDatabase } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database on the test server where `CREATE DATABASE` can be run. */
    pgAdminUrl: string;
    /** The migrated template every test database is cloned from. */
    pgTemplateDb: string;
  }
}

/**
 * Starts PostgreSQL once for the whole run and migrates a template database, so each test file
 * clones a ready schema instead of migrating its own (graphile-worker's approach).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const postgres = await startPostgres();
  // Unique, so runs sharing one DATABASE_URL server do not collide.
  const template = `chargeonce_tpl_${process.pid}_${randomBytes(4).toString('hex')}`;
  const dropTemplate = async () => {
    try {
      await adminQuery(
        postgres.adminUrl,
        `ALTER DATABASE ${pg.escapeIdentifier(template)} WITH IS_TEMPLATE false`,
      );
      await dropDatabase(postgres.adminUrl, template);
    } catch {
      // Best effort: a throwaway server goes away anyway; on a shared one the name is unique.
    }
  };
  try {
    await adminQuery(postgres.adminUrl, `CREATE DATABASE ${pg.escapeIdentifier(template)}`);
    await migrate(urlForDatabase(postgres.adminUrl, template), { schema: 'chargeonce' });
    // A template must have no connections when cloned; refuse any from now on.
    await adminQuery(
      postgres.adminUrl,
      `ALTER DATABASE ${pg.escapeIdentifier(template)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`,
    );
  } catch (error) {
    await dropTemplate();
    await postgres.stop();
    throw error;
  }
  project.provide('pgAdminUrl', postgres.adminUrl);
  project.provide('pgTemplateDb', template);

  return async () => {
    try {
      await dropTemplate();
    } finally {
      await postgres.stop();
    }
  };
}
