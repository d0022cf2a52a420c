import { cp, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmptyDatabase, type TestDatabase } from '../support/testDatabase.js';
import { createConsumerProject, type ConsumerProject } from './support/consumerProject.js';
import { CONSUMER_FILES } from './support/consumerSources.js';
import { packPackage, REPO_ROOT, type PackedPackage } from './support/packPackage.js';
import { run, runOk, startProcess, type StartedProcess } from './support/run.js';

// chargeonce as users get it: built and packed once (`npm pack`), checked as a tarball, then
// installed by npm into a project of its own and used from ESM, CommonJS and TypeScript, with
// node-postgres and slonik pools, and by the examples.

/** The public entry points, as `exports` names them. */
const ENTRY_POINTS = ['.', './http', './client', './testing', './stripe'];

/** What the consumer project installs beside the tarball, at the repository's versions. */
const CONSUMER_DEPENDENCIES = [
  'pg',
  'slonik',
  'stripe',
  'express',
  'fastify',
  'hono',
  '@hono/node-server',
  'pg-boss',
  '@types/node',
  '@types/pg',
  '@types/express',
];

/** A tool of the repository's own node_modules. */
const tool = (path: string) => join(REPO_ROOT, 'node_modules', path);
const TSC = tool('typescript/bin/tsc');
/** tsx's loader, to run the TypeScript examples as `npx tsx` would. */
const TSX = pathToFileURL(tool('tsx/dist/loader.mjs')).href;

type AttwResolution = {
  resolution?: { fileName: string };
  implementationResolution?: { fileName: string };
};
type AttwReport = {
  problems: Record<string, unknown[]>;
  analysis: {
    problems: unknown[];
    entrypoints: Record<string, { resolutions: Record<string, AttwResolution> }>;
  };
};

/** The JSON a consumer script printed on its last line. */
function lastJsonLine(stdout: string): unknown {
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? 'null');
}

/** Waits until `check` returns something, polling; rejects after `timeoutMs`. */
async function waitFor<T>(
  check: () => T | undefined,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let packed: PackedPackage;

beforeAll(async () => {
  packed = await packPackage();
}, 600_000);

afterAll(async () => {
  await packed?.remove();
});

describe('the packed tarball', () => {
  /** The tarball unpacked: `<extracted>/package/…`, as npm lays it out. */
  let extracted: string;
  let shipped: string[];

  beforeAll(async () => {
    extracted = join(packed.tarball, '..', 'extracted');
    await mkdir(extracted);
    await runOk('tar', ['-xzf', packed.tarball, '-C', extracted], { cwd: extracted });
    shipped = packed.files;
  });

  it('passes arethetypeswrong: ESM and CommonJS each get their own code and types', async () => {
    const { stdout } = await runOk(
      process.execPath,
      [tool('@arethetypeswrong/cli/dist/index.js'), packed.tarball, '--format', 'json'],
      { cwd: REPO_ROOT },
    );
    const report = JSON.parse(stdout) as AttwReport;
    expect(report.problems).toEqual({});
    expect(report.analysis.problems).toEqual([]);
    for (const entry of ENTRY_POINTS) {
      const { resolutions } = report.analysis.entrypoints[entry]!;
      const files = (kind: string) => [
        resolutions[kind]?.resolution?.fileName,
        resolutions[kind]?.implementationResolution?.fileName,
      ];
      expect(files('node16-cjs'), entry).toEqual([
        expect.stringMatching(/\.d\.cts$/),
        expect.stringMatching(/\.cjs$/),
      ]);
      expect(files('node16-esm'), entry).toEqual([
        expect.stringMatching(/\.d\.ts$/),
        expect.stringMatching(/\.js$/),
      ]);
      // TypeScript's `moduleResolution: node10` (the default of `module: commonjs`) too.
      expect(resolutions.node10?.resolution?.fileName, entry).toMatch(/\.d\.cts$/);
    }
  });

  it('passes publint with no error or warning', async () => {
    const { stdout } = await runOk(
      process.execPath,
      [tool('publint/src/cli.js'), 'run', packed.tarball, '--strict', '--level', 'warning'],
      { cwd: REPO_ROOT },
    );
    expect(stdout).not.toMatch(/Errors:|Warnings:/);
  });

  it('ships the build, migrations, LICENSE, CHANGELOG and README, and no sources or tests', () => {
    expect(shipped).toEqual(
      expect.arrayContaining([
        'LICENSE',
        'CHANGELOG.md',
        'README.md',
        'package.json',
        'migrations/0001_init.sql',
        'dist/cli.js',
        'dist/chaos/worker.js',
        'dist/chaos/stripe/stripeChaosProvider.js',
        ...['index', 'http/index', 'client/index', 'testing/index', 'stripe/index'].flatMap(
          (entry) => ['.js', '.cjs', '.d.ts', '.d.cts'].map((ext) => `dist/${entry}${ext}`),
        ),
      ]),
    );
    expect(shipped.filter((file) => /^(src|test|scripts|examples)\//.test(file))).toEqual([]);
  });

  it('has a bin that npm keeps, and packs without warnings', () => {
    expect(packed.manifest.bin).toEqual({ chargeonce: 'dist/cli.js' });
    expect(packed.npmWarnings).toEqual([]);
  });

  it('has source maps that carry the sources they name', async () => {
    const maps = shipped.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(10);
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(
        await readFile(join(extracted, 'package', map), 'utf8'),
      ) as { sources: string[]; sourcesContent?: (string | null)[] };
      // A map of a file that only re-exports names no source, and has no contents either.
      const contents = sourcesContent ?? [];
      expect(contents.length, map).toBe(sources.length);
      expect(
        contents.filter((content) => typeof content !== 'string'),
        map,
      ).toEqual([]);
    }
  });

  it('builds chargeonce/client for the browser from the shipped files, with no database code', async () => {
    // The unpacked package resolves its dependencies from the repository's node_modules.
    const nodeModules = join(extracted, 'node_modules');
    await mkdir(nodeModules);
    for (const name of ['p-retry', 'is-network-error']) {
      await symlink(join(REPO_ROOT, 'node_modules', name), join(nodeModules, name), 'dir');
    }
    try {
      const result = await build({
        entryPoints: [join(extracted, 'package/dist/client/index.js')],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs.some((input) => input.includes('p-retry'))).toBe(true);
      expect(
        inputs.filter((input) => /node_modules\/(slonik|pg|zod|currency-codes)\//.test(input)),
      ).toEqual([]);
    } finally {
      await rm(nodeModules, { recursive: true, force: true });
    }
  });
});

describe('installed by npm into a project of its own', () => {
  let project: ConsumerProject | undefined;
  let db: TestDatabase | undefined;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let latestMigration: number;

  beforeAll(async () => {
    project = await createConsumerProject(packed, CONSUMER_DEPENDENCIES);
    if (project.installedFrom !== 'cache') {
      // Not the package's fault: npm's cache missed a package the repository's install had.
      console.warn('the consumer project was installed with the npm registry, not offline');
    }
    dir = project.dir;
    for (const [path, text] of Object.entries(CONSUMER_FILES)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    await cp(join(REPO_ROOT, 'examples'), join(dir, 'examples'), {
      recursive: true,
      filter: (source) => !source.endsWith('tsconfig.json'),
    });
    db = await createEmptyDatabase();
    env = { ...process.env, DATABASE_URL: db.url, PORT: '0' };
    const migrations = await readdir(join(REPO_ROOT, 'migrations'));
    latestMigration = Math.max(...migrations.map((file) => Number(file.slice(0, 4))));
  }, 600_000);

  afterAll(async () => {
    await db?.drop();
    await project?.remove();
  });

  it('type-checks in TypeScript NodeNext, as ESM and as CommonJS, with the examples', async () => {
    const result = await run(process.execPath, [TSC, '-p', '.'], { cwd: dir });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  }, 180_000);

  it('type-checks in TypeScript CommonJS with node10 resolution', async () => {
    const result = await run(process.execPath, [TSC, '-p', 'ts-commonjs'], { cwd: dir });
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  }, 180_000);

  for (const [flavor, script] of [
    ['ESM (import)', 'esm.mjs'],
    ['CommonJS (require)', 'cjs.cjs'],
    [
      'both builds at once (the engine imported, the HTTP edge and testing kit required)',
      'mixed.mjs',
    ],
  ] as const) {
    it(`runs from ${flavor}: connection string, pg.Pool and slonik pool with hooks, HTTP, chaos`, async () => {
      const { stdout } = await runOk(process.execPath, [script], { cwd: dir, env });
      expect(lastJsonLine(stdout)).toEqual({
        migrate: { applied: expect.any(Array) as unknown, currentVersion: latestMigration },
        connectionString: { status: 'succeeded', replayed: true, sameBody: true },
        pgPool: { status: 'succeeded', hookWrote: 'succeeded' },
        slonikPool: { status: 'succeeded', hookWrote: 'reserved' },
        http: { status: 201, reused: { isClientError: true, status: 422 } },
        chaos: { ok: true, charges: 20 },
        ...(script === 'mixed.mjs'
          ? { crossCopy: { twoCopies: true, sameKind: true, otherKind: false } }
          : {}),
      });
    }, 180_000);
  }

  it('loads chargeonce/client with require() on a Node without require(esm)', async () => {
    // p-retry is ESM only: the CommonJS build carries it, so the client needs no require(esm).
    const { stdout } = await runOk(
      process.execPath,
      [
        '--no-experimental-require-module',
        '-e',
        "console.log(typeof require('chargeonce/client').createChargeClient)",
      ],
      { cwd: dir },
    );
    expect(stdout.trim()).toBe('function');
  });

  it('runs `npx chargeonce --help` and `--version`', async () => {
    const help = await runOk('npx', ['--offline', 'chargeonce', '--help'], { cwd: dir });
    expect(help.stdout).toMatch(/^Usage: chargeonce <command>/);
    const version = await runOk('npx', ['--offline', 'chargeonce', '--version'], { cwd: dir });
    expect(version.stdout.trim()).toBe(packed?.manifest.version);
  });

  describe('the examples', () => {
    const charge = (baseUrl: string, key: string, amountMinor: number) =>
      fetch(`${baseUrl}/charges`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer sk_test_shop',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ customerId: 'c_1', amountMinor, currency: 'EUR' }),
      });

    const refund = (baseUrl: string, chargeId: string, key: string) =>
      fetch(`${baseUrl}/charges/${chargeId}/refunds`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer sk_test_shop',
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ amountMinor: 500 }),
      });

    for (const example of ['express', 'fastify', 'hono']) {
      it(`${example}: charges, replays, refuses a reused key, refunds, and stops on SIGTERM`, async () => {
        const { started, match } = await startProcess(
          process.execPath,
          ['--import', TSX, `examples/${example}.ts`],
          { cwd: dir, env, ready: /listening on (http:\/\/\S+)/ },
        );
        try {
          const baseUrl = match[1]!;
          const key = `${example}-1`;
          const first = await charge(baseUrl, key, 2000);
          const firstBody = await first.text();
          const again = await charge(baseUrl, key, 2000);
          const reused = await charge(baseUrl, key, 2500);
          expect([first.status, again.status, reused.status]).toEqual([201, 201, 422]);
          expect(again.headers.get('idempotent-replayed')).toBe('true');
          expect(await again.text()).toBe(firstBody);
          expect(await reused.json()).toMatchObject({
            error: { code: 'idempotency_key_reused' },
          });
          const { id } = JSON.parse(firstBody) as { id: string };
          const refunded = await refund(baseUrl, id, `${example}-refund-1`);
          expect(refunded.status).toBe(201);
          expect(await refunded.json()).toMatchObject({ object: 'refund', status: 'succeeded' });
        } finally {
          expect(await stopWithin(started)).toBe(0);
        }
      }, 120_000);
    }

    it('next-route: POST(request) charges, replays and refuses a reused key', async () => {
      const { stdout } = await runOk(process.execPath, ['--import', TSX, 'next-route-driver.mjs'], {
        cwd: dir,
        env,
      });
      expect(lastJsonLine(stdout)).toEqual({
        runtime: 'nodejs',
        statuses: [201, 201, 422],
        replayed: 'true',
        sameBody: true,
      });
    }, 120_000);

    it('payment-worker: a job delivered twice charges once; a reused key ends the job', async () => {
      const { started } = await startProcess(
        process.execPath,
        ['--import', TSX, 'examples/payment-worker.ts'],
        { cwd: dir, env, ready: /worker ready/ },
      );
      const boss = new PgBoss(db!.url);
      await boss.start();
      try {
        const request = {
          merchantId: 'm_shop',
          customerId: 'c_1',
          amountMinor: 2000,
          currency: 'EUR',
        };
        const jobs = [
          { key: 'order-1', request },
          { key: 'order-1', request }, // the same job again: a replay
          { key: 'order-1', request: { ...request, amountMinor: 2500 } },
        ];
        const lines: unknown[] = [];
        for (const job of jobs) {
          const id = await boss.send('charges', job);
          lines.push(
            await waitFor(() => {
              const line = started
                .output()
                .split('\n')
                .find((text) => text.includes(`"job":"${id}"`));
              return line === undefined ? undefined : (JSON.parse(line) as unknown);
            }, `job ${id}`),
          );
        }
        expect(lines).toEqual([
          expect.objectContaining({ status: 'succeeded', replayed: false }),
          expect.objectContaining({ status: 'succeeded', replayed: true }),
          expect.objectContaining({ refused: 'idempotency_key_reused' }),
        ]);
      } finally {
        await boss.stop({ graceful: false, wait: true });
        expect(await stopWithin(started)).toBe(0);
      }
    }, 120_000);
  });
});

/** Stops an example with SIGTERM; one that has not exited in 20 s is killed (and fails). */
async function stopWithin(started: StartedProcess): Promise<number | null> {
  const timer = setTimeout(() => started.child.kill('SIGKILL'), 20_000);
  try {
    return await started.stop();
  } finally {
    clearTimeout(timer);
  }
}
