import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** chargeonce's public module, as the bench uses it: this checkout's, or the base's. */
export type EngineModule = typeof import('../../src/index.js');

let base: { module: EngineModule; rev: string } | null = null;

/**
 * `--base REV`: the engine as it was at REV, checked out beside this one (a git worktree under
 * `.bench/`, sharing this checkout's node_modules) and loaded into this process, so that the
 * `engine-base` design runs it side by side with `engine`, round for round: a change to the hot
 * path is measured against what it replaced, on the same machine at the same moments.
 *
 * @throws {Error} when REV names no commit, or the worktree cannot be made.
 */
export async function loadBaseEngine(rev: string): Promise<void> {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  const sha = git('rev-parse', '--verify', `${rev}^{commit}`);
  const dir = resolve('.bench', `base-${sha.slice(0, 12)}`);
  if (!existsSync(dir)) git('worktree', 'add', '--detach', dir, sha);
  const module = (await import(pathToFileURL(join(dir, 'src', 'index.ts')).href)) as EngineModule;
  base = { module, rev: `${rev} (${sha.slice(0, 12)})` };
}

/** The base engine's module; throws when `--base` was not given. */
export function baseEngine(): { module: EngineModule; rev: string } {
  if (!base) throw new Error('the engine-base design needs --base REV');
  return base;
}

/** The base engine's module, or null without `--base`. */
export function maybeBaseEngine(): { module: EngineModule; rev: string } | null {
  return base;
}
