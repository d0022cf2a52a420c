import { spawn } from 'node:child_process';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { movedTo, type PostgresBinaries } from './postgresBinaries.js';
import type { UserIds } from './postgresUser.js';

/**
 * Binaries that the user `ids` can run. As root, PostgreSQL runs as `postgres`, which must be
 * able to enter every folder above them; a checkout under a private folder (root's home, mode
 * 0700) shuts it out, and `initdb` would fail to spawn with EACCES. The installation is then
 * copied into `scratchDir` (a folder that user can enter, removed with the cluster) and run from
 * there. A copy, not a change of the private folder's mode: that folder is the user's.
 *
 * @throws {Error} when that user can run neither the binaries nor the copy, saying what to do.
 */
export async function reachableBinaries(
  binaries: PostgresBinaries,
  ids: UserIds,
  scratchDir: string,
): Promise<PostgresBinaries> {
  if (await canRun(binaries.initdb, ids)) return binaries;
  const copy = movedTo(binaries, join(scratchDir, 'postgresql'));
  await cp(binaries.installDir, copy.installDir, { recursive: true, verbatimSymlinks: true });
  if (await canRun(copy.initdb, ids)) return copy;
  throw new Error(
    `embedded PostgreSQL runs as the \`postgres\` user when started by root, and that user can enter neither ${binaries.installDir} nor ${scratchDir}: point TMPDIR at a folder every user can enter (such as /tmp), work from a checkout outside any private folder, or set DATABASE_URL to a PostgreSQL you run`,
  );
}

/**
 * True when `ids` can run `file --version`. A spawn that fails (EACCES on a folder above it)
 * is an answer here, not an unhandled `error` event.
 */
function canRun(file: string, ids: UserIds): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(file, ['--version'], { ...ids, stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}
