import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The commit the numbers were measured on, and whether the engine's sources differed from it:
 * without that, a number cannot be tied to the code that produced it. Null outside a git checkout.
 */
export async function sourceVersion(
  root: URL,
): Promise<{ commit: string; uncommittedChanges: boolean } | null> {
  try {
    const cwd = fileURLToPath(root);
    const { stdout: commit } = await run('git', ['rev-parse', '--short=12', 'HEAD'], { cwd });
    const { stdout: status } = await run(
      'git',
      ['status', '--porcelain', '--', 'src', 'migrations'],
      { cwd },
    );
    return { commit: commit.trim(), uncommittedChanges: status.trim() !== '' };
  } catch {
    return null;
  }
}
