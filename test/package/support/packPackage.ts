import { cp, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runOk } from './run.js';

/** The repository: three folders above this file. */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** What the build reads besides the files the package ships. */
const BUILD_INPUTS = [
  'package.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsup.config.ts',
  'src',
];

/** A packed chargeonce: the tarball, and the folder it was built and packed in. */
export type PackedPackage = {
  /** The `.tgz` that `npm pack` wrote. */
  tarball: string;
  /** The package.json that went into it. */
  manifest: PackageManifest;
  /** The paths in the tarball, as npm listed them. */
  files: string[];
  /**
   * What `npm publish --dry-run` warned about the package (auto-corrected fields, such as a
   * `bin` path it would remove), less the reminder to log in.
   */
  npmWarnings: string[];
  /** Removes the build folder and the tarball. */
  remove(): Promise<void>;
};

export type PackageManifest = {
  name: string;
  version: string;
  license: string;
  files: string[];
  bin: Record<string, string>;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  overrides: Record<string, unknown>;
};

/**
 * Builds and packs chargeonce as `npm publish` would (`npm pack` runs the `prepare` build), in a
 * copy of the repository's sources: the tests never touch the repository's own `dist/`, and two
 * test files may pack at once. The copy borrows the repository's node_modules for the build.
 */
export async function packPackage(): Promise<PackedPackage> {
  const manifest = JSON.parse(
    await readFile(join(REPO_ROOT, 'package.json'), 'utf8'),
  ) as PackageManifest;
  const dir = await mkdtemp(join(tmpdir(), 'chargeonce-pack-'));
  try {
    const shipped = manifest.files.filter((file) => !file.startsWith('dist'));
    for (const file of new Set([...BUILD_INPUTS, ...shipped])) {
      await cp(join(REPO_ROOT, file), join(dir, file), { recursive: true });
    }
    await symlink(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    const packed = await runOk('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: dir,
      timeoutMs: 600_000,
    });
    // The build's own log comes first; npm's JSON report is the first line opening with `[`.
    const [report] = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[/m))) as [
      { filename: string; files: { path: string }[] },
    ];
    // What npm would correct on publishing; offline, and the build is already there.
    const published = await runOk(
      'npm',
      ['publish', '--dry-run', '--offline', '--ignore-scripts', '--json'],
      { cwd: dir },
    );
    const npmWarnings = published.stderr
      .split('\n')
      .filter((line) => /^npm warn/i.test(line) && !/logged in/.test(line));
    return {
      tarball: join(dir, report.filename),
      manifest,
      files: report.files.map((file) => file.path),
      npmWarnings,
      remove: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
