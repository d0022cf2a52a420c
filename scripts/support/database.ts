import { startEmbeddedPostgres } from './embeddedPostgres.js';

/** The database a script runs against, and how to let it go. */
export type ScriptDatabase = {
  url: string;
  source: 'DATABASE_URL' | 'embedded';
  stop(): Promise<void>;
};

/** `DATABASE_URL` when set (left running afterwards), else an embedded PostgreSQL. */
export async function startDatabase(): Promise<ScriptDatabase> {
  const fromEnv = process.env.DATABASE_URL;
  if (fromEnv) return { url: fromEnv, source: 'DATABASE_URL', stop: async () => {} };
  const server = await startEmbeddedPostgres();
  return { url: server.adminUrl, source: 'embedded', stop: () => server.stop() };
}
