import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { failKey } from '../../src/store/failKey.js';
import { renderInspection, renderKeyList } from '../../src/cli/adminRender.js';
import type { KeyInspection, KeyPage } from '../../src/index.js';
import {
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
} from '../support/testDatabase.js';
import { aRequest, seedAbandonedKeys } from '../support/charges.js';

const run = promisify(execFile);
let db: TestDatabase;
let dir: string;
let providerModule: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query(sql.unsafe`CREATE TABLE hook_log (key text NOT NULL, kind text NOT NULL)`);
  // What `sweep --provider` loads: a provider and the hooks that go with it.
  dir = await mkdtemp(join(tmpdir(), 'chargeonce-cli-admin-'));
  providerModule = join(dir, 'provider.mjs');
  await writeFile(
    providerModule,
    `export default () => ({
  createCharge: () => Promise.reject(new Error('not here')),
  findCharge: () => Promise.resolve(null),
});
export const hooks = {
  complete: (tx, ctx) => tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, ctx.status]),
  cancel: (tx, ctx) => tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, 'cancelled']),
};
`,
  );
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

type Result = { code: number; stdout: string; stderr: string };

/** Runs the command against the test database; resolves whatever its exit code. */
async function cli(...args: string[]): Promise<Result> {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: db.url },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: Result) => error,
  );
}

async function parkedKeys(merchantId: string, count: number) {
  const seeds = await seedAbandonedKeys(db.pool, db.tables, count, aRequest({ merchantId }));
  await db.pool.query(sql.unsafe`
    UPDATE ${db.tables.keys} SET lock_token = NULL WHERE merchant_id = ${merchantId}`);
  for (const seed of seeds) {
    const scoped = { merchantId, operation: 'charge', key: seed.key };
    expect(
      await failKey(db.pool, db.tables, { ...scoped, lockToken: randomUUID(), reason: 'stuck' }),
    ).toBe(true);
  }
  return seeds;
}

async function hooksRun(key: string): Promise<readonly string[]> {
  return db.pool.anyFirst(sql.type(z.object({ kind: z.string() }))`
    SELECT kind FROM hook_log WHERE key = ${key}`);
}

describe('chargeonce migrate', () => {
  it('migrates an empty database, then has nothing left to do', async () => {
    const empty = await createEmptyDatabase();
    try {
      const url = ['--database-url', empty.url];
      const first = await cli('migrate', ...url, '--json');
      const again = await cli('migrate', ...url);

      expect(first.code).toBe(0);
      const result = JSON.parse(first.stdout) as { applied: number[]; currentVersion: number };
      expect(result.applied).toContain(4);
      expect(result.currentVersion).toBe(result.applied.at(-1));
      expect(again.stdout.trim()).toBe(`schema at version ${result.currentVersion}; applied: none`);
    } finally {
      await empty.drop();
    }
  });
});

describe('chargeonce inspect, list, resolve, requeue', () => {
  it('inspect: JSON, plain lines when piped, exit 1 for no such key', async () => {
    const merchantId = 'm_cli_inspect';
    const [seed] = await parkedKeys(merchantId, 1);

    const json = await cli('inspect', '--merchant', merchantId, '--key', seed!.key, '--json');
    const plain = await cli('inspect', '--merchant', merchantId, '--key', seed!.key);
    const missing = await cli('inspect', '--merchant', merchantId, '--key', 'nope');

    const found = JSON.parse(json.stdout) as KeyInspection;
    expect(found).toMatchObject({ recoveryPoint: 'failed', lastError: 'stuck', key: seed!.key });
    expect(found.history.map((step) => step.event)).toEqual(['claimed', 'reserved', 'parked']);
    const lines = plain.stdout.trimEnd().split('\n');
    expect(lines).toContain('recovery point: failed');
    expect(lines).toContain('last error: stuck');
    expect(lines.filter((line) => line.startsWith('history: '))).toHaveLength(3);
    expect(plain.stdout).not.toContain('\x1b');
    expect(missing).toMatchObject({ code: 1, stdout: `no such key: ${merchantId} nope\n` });
  });

  it('list: pages through the keys by cursor; piped, one key per line and the cursor on stderr', async () => {
    const merchantId = 'm_cli_list';
    const seeds = await seedAbandonedKeys(db.pool, db.tables, 5, aRequest({ merchantId }));
    const filter = ['--merchant', merchantId, '--point', 'reserved', '--limit', '2'];

    const seen: string[] = [];
    const ids = new Map<string, string>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await cli('list', ...filter, '--json', ...(cursor ? ['--cursor', cursor] : []));
      const parsed = JSON.parse(page.stdout) as KeyPage;
      seen.push(...parsed.keys.map((k) => k.key));
      for (const k of parsed.keys) ids.set(k.key, k.chargeId);
      cursor = parsed.nextCursor;
      pages += 1;
    } while (cursor !== null);
    const piped = await cli('list', ...filter);
    const all = await cli('list', ...filter, '--all');

    expect(pages).toBe(3);
    expect(seen.sort()).toEqual(seeds.map((s) => s.key).sort());
    const lines = piped.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    const fields = lines[0]!.split('\t');
    expect(fields).toHaveLength(10);
    expect(fields.slice(1, 5)).toEqual([merchantId, 'charge', expect.any(String), 'reserved']);
    // The key's own charge id, last.
    expect(fields[9]).toMatch(/^[0-9a-f-]{36}$/);
    expect(fields[9]).toBe(ids.get(fields[3]!));
    expect(piped.stderr).toMatch(/^more keys: --cursor [A-Za-z0-9_-]+\n$/);
    expect(all.stdout.trimEnd().split('\n')).toHaveLength(5);
    expect(all.stderr).toBe('');
  });

  it('resolve: runs the hooks of --provider, prints the outcome, refuses a second time', async () => {
    const merchantId = 'm_cli_resolve';
    const [succeeded, cancelled] = await parkedKeys(merchantId, 2);
    const resolve = (key: string, ...extra: string[]) =>
      cli(
        'resolve',
        '--merchant',
        merchantId,
        '--key',
        key,
        '--actor',
        'ada',
        '--reason',
        'dashboard',
        ...extra,
      );

    const first = await resolve(
      succeeded!.key,
      '--outcome',
      'succeeded',
      '--provider-charge-id',
      'ch_cli',
      '--provider',
      providerModule,
      '--json',
    );
    const plain = await resolve(
      cancelled!.key,
      '--outcome',
      'cancelled',
      '--provider',
      providerModule,
    );
    const second = await resolve(succeeded!.key, '--outcome', 'cancelled', '--no-hooks');

    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      outcome: { status: 'succeeded', httpStatus: 201, providerChargeId: 'ch_cli' },
      audit: { action: 'resolve', actor: 'ada', reason: 'dashboard' },
    });
    expect(await hooksRun(succeeded!.key)).toEqual(['succeeded']);
    expect(plain.stdout).toMatch(
      new RegExp(
        `^resolved: ${merchantId} ${cancelled!.key} cancelled \\(HTTP 410, charge [0-9a-f-]{36}\\) by ada\\n$`,
      ),
    );
    expect(await hooksRun(cancelled!.key)).toEqual(['cancelled']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('key_not_resolvable');
    expect(second.stderr).toContain('completed');
  });

  it('resolve: says what is missing, and runs nothing without --provider or --no-hooks', async () => {
    const merchantId = 'm_cli_resolve_usage';
    const [seed] = await parkedKeys(merchantId, 1);
    const base = ['resolve', '--merchant', merchantId, '--key', seed!.key];

    const noHooks = await cli(...base, '--outcome', 'cancelled', '--actor', 'a', '--reason', 'r');
    const noActor = await cli(...base, '--outcome', 'cancelled', '--no-hooks', '--reason', 'r');
    const noChargeId = await cli(
      ...base,
      '--outcome',
      'succeeded',
      '--no-hooks',
      '--actor',
      'a',
      '--reason',
      'r',
    );

    expect(noHooks.code).toBe(2);
    expect(noHooks.stderr).toContain('--no-hooks');
    expect(noHooks.stderr).toContain("Run 'chargeonce resolve --help' for usage.");
    expect(noActor.stderr).toContain('resolve needs --actor');
    expect(noChargeId.code).toBe(2);
    expect(noChargeId.stderr).toContain('invalid_request');
    expect(noChargeId.stderr).toContain('providerChargeId');
    const inspected = JSON.parse(
      (await cli('inspect', '--merchant', merchantId, '--key', seed!.key, '--json')).stdout,
    ) as KeyInspection;
    expect(inspected.recoveryPoint).toBe('failed');
    expect(inspected.audit).toEqual([]);
  });

  it('requeue --actor --reason: requeued and audited; exit 1 when nothing is parked', async () => {
    const merchantId = 'm_cli_requeue_audit';
    const [seed] = await parkedKeys(merchantId, 1);
    const requeue = () =>
      cli(
        'requeue',
        '--merchant',
        merchantId,
        '--key',
        seed!.key,
        '--actor',
        'grace',
        '--reason',
        'provider is back',
      );

    const first = await requeue();
    const again = await requeue();

    expect(first).toMatchObject({ code: 0, stdout: `requeued: ${merchantId} ${seed!.key}\n` });
    expect(again.code).toBe(1);
    expect(again.stdout).toContain('not requeued');
    const inspected = JSON.parse(
      (await cli('inspect', '--merchant', merchantId, '--key', seed!.key, '--json')).stdout,
    ) as KeyInspection;
    expect(inspected.audit).toMatchObject([
      { action: 'requeue', actor: 'grace', reason: 'provider is back', result: 'reserved' },
    ]);
  });

  it('list: --limit and --older-than-ms are refused by the rule the engine applies, in its words', async () => {
    const refusal = (message: string) =>
      `chargeonce: ${message}\nRun 'chargeonce list --help' for usage.\n`;
    const list = (...extra: string[]) => cli('list', '--merchant', 'm_cli_list_rules', ...extra);

    const refused = await Promise.all([
      list('--limit', '0'),
      list('--limit', '1001'),
      list('--limit', 'abc'),
      list('--older-than-ms', '-5'),
      list('--older-than-ms=-5'),
      list('--older-than-ms', '1.5'),
    ]);
    const taken = await Promise.all([
      list('--limit', '1', '--older-than-ms', '0'),
      list('--limit', '1000'),
    ]);

    expect(refused.map(({ code, stdout }) => ({ code, stdout }))).toEqual(
      refused.map(() => ({ code: 2, stdout: '' })),
    );
    expect(refused.map((result) => result.stderr)).toEqual([
      refusal('--limit must be an integer from 1 to 1000, got 0'),
      refusal('--limit must be an integer from 1 to 1000, got 1001'),
      refusal('--limit must be an integer from 1 to 1000, got abc'),
      refusal('--older-than-ms must be a non-negative integer of milliseconds, got -5'),
      refusal('--older-than-ms must be a non-negative integer of milliseconds, got -5'),
      refusal('--older-than-ms must be a non-negative integer of milliseconds, got 1.5'),
    ]);
    expect(taken).toMatchObject([
      { code: 0, stderr: '' },
      { code: 0, stderr: '' },
    ]);
  });

  it('resolve --json: an engine refusal is one JSON object on stderr, with its fields', async () => {
    const merchantId = 'm_cli_resolve_json';
    const [seed] = await parkedKeys(merchantId, 1);
    const base = ['resolve', '--merchant', merchantId, '--key', seed!.key, '--no-hooks'];

    const invalid = await cli(
      ...base,
      '--outcome',
      'succeeded',
      '--actor',
      'a',
      '--reason',
      'r',
      '--json',
    );
    const noActor = await cli(...base, '--outcome', 'cancelled', '--reason', 'r', '--json');

    expect(invalid).toMatchObject({ code: 2, stdout: '' });
    expect(invalid.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(invalid.stderr)).toEqual({
      error: {
        code: 'invalid_request',
        message: 'Invalid request: providerChargeId: is required',
        issues: [{ field: 'providerChargeId', message: 'is required' }],
      },
    });
    expect(noActor).toMatchObject({ code: 2, stdout: '' });
    expect(JSON.parse(noActor.stderr)).toEqual({
      error: {
        code: 'usage',
        message: 'resolve needs --actor',
        help: 'chargeonce resolve --help',
      },
    });
  });

  it('requeue: refused without --actor or --reason, nothing written; its help says both are required', async () => {
    const merchantId = 'm_cli_requeue_needs_who';
    const [seed] = await parkedKeys(merchantId, 1);
    const base = ['requeue', '--merchant', merchantId, '--key', seed!.key];

    const noActor = await cli(...base, '--reason', 'provider is back');
    const noReason = await cli(...base, '--actor', 'grace');
    const neither = await cli(...base, '--json');
    const emptyActor = await cli(...base, '--actor', '', '--reason', 'provider is back');
    const help = await cli('requeue', '--help');

    expect(noActor).toMatchObject({
      code: 2,
      stdout: '',
      stderr: "chargeonce: requeue needs --actor\nRun 'chargeonce requeue --help' for usage.\n",
    });
    expect(noReason).toMatchObject({
      code: 2,
      stdout: '',
      stderr: "chargeonce: requeue needs --reason\nRun 'chargeonce requeue --help' for usage.\n",
    });
    expect(neither).toMatchObject({ code: 2, stdout: '' });
    expect(JSON.parse(neither.stderr)).toEqual({
      error: { code: 'usage', message: 'requeue needs --actor', help: 'chargeonce requeue --help' },
    });
    expect(emptyActor).toMatchObject({ code: 2, stdout: '' });
    const inspected = JSON.parse(
      (await cli('inspect', '--merchant', merchantId, '--key', seed!.key, '--json')).stdout,
    ) as KeyInspection;
    expect(inspected.recoveryPoint).toBe('failed');
    expect(inspected.audit).toEqual([]);
    expect(help.stdout).toMatch(
      /^Usage: chargeonce requeue --merchant ID --key KEY --actor WHO --reason WHY/,
    );
    expect(help.stdout).toMatch(/--actor WHO +who requeues it \(required; stored\)/);
    expect(help.stdout).toMatch(/--reason WHY +.*\(required; stored\)/);
    expect(help.stdout).not.toContain('when given');
  });

  it('refuses an option the command does not take, and prints each command its help', async () => {
    const wrong = await cli('inspect', '--merchant', 'm', '--key', 'k', '--point', 'failed');
    const help = await cli('list', '--help');

    expect(wrong).toMatchObject({
      code: 2,
      stderr: "chargeonce: inspect takes no --point\nRun 'chargeonce inspect --help' for usage.\n",
    });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: chargeonce list/);
    expect(help.stdout).toContain('--older-than-ms');
  });
});

describe('on a terminal', () => {
  const at = new Date('2025-01-02T03:04:05.678Z');

  it('list is an aligned table with a header', () => {
    const key = {
      merchantId: 'm_1',
      operation: 'charge',
      key: 'k-1',
      recoveryPoint: 'failed' as const,
      chargeId: 'c',
      chargeStatus: 'reserved' as const,
      attempts: 6,
      leaseHeld: false,
      lastError: 'the provider\ncould not answer',
      responseStatus: null,
      createdAt: at,
      updatedAt: at,
    };
    const lines = renderKeyList([key, { ...key, key: 'a-much-longer-key' }], {
      tty: true,
      columns: 200,
    });

    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^CREATED\s+MERCHANT\s+OPERATION\s+KEY\s+POINT/);
    expect(lines[1]!.indexOf('failed')).toBe(lines[2]!.indexOf('failed'));
    expect(lines[1]).toContain('the provider could not answer');
    expect(renderKeyList([], { tty: true, columns: 80 })).toEqual(['no keys']);
    expect(renderKeyList([key], { tty: true, columns: 40 })[1]).toHaveLength(40);
  });

  it('inspect aligns its labels and sets history and audit apart', () => {
    const found: KeyInspection = {
      merchantId: 'm_1',
      operation: 'charge',
      key: 'k-1',
      recoveryPoint: 'completed',
      request: { amountMinor: 2000 },
      requestHash: 'h',
      attempts: 2,
      lease: { held: false, remainingMs: 0, until: null },
      lastError: null,
      charge: null,
      movement: null,
      outcome: { httpStatus: 410, body: '{}' },
      createdAt: at,
      updatedAt: at,
      completedAt: at,
      failedAt: null,
      history: [{ at, event: 'claimed', detail: null }],
      audit: [],
    };
    const lines = renderInspection(found, { tty: true, columns: 120 });

    expect(lines[0]).toMatch(/^key {13}m_1 charge k-1$/);
    expect(lines).toContain('history');
    expect(lines).toContain(`  ${at.toISOString()}  claimed`);
    expect(lines.slice(-2)).toEqual(['audit', '  none']);
    const refund = renderInspection(
      {
        ...found,
        operation: 'refund',
        movement: {
          id: 'r-1',
          kind: 'refund',
          chargeId: 'c-1',
          status: 'refused',
          amountMinor: 500,
          currency: 'EUR',
          reason: null,
          refusal: 'exceeds_refundable',
          providerKey: 'co_x',
          providerChargeId: 'ch_1',
          providerMovementId: null,
          failureCode: null,
          chargeTotals: {
            authorizedOnly: true,
            capturedMinor: 800,
            captureReservedMinor: null,
            refundReservedMinor: 200,
            refundedMinor: 300,
          },
          createdAt: at,
          updatedAt: at,
        },
      },
      { tty: false, columns: 120 },
    );
    expect(refund).toContain('refund: r-1 refused (exceeds_refundable)');
    expect(refund).toContain('of charge: c-1');
    expect(refund).toContain('amount: 500 EUR');
    expect(refund).toContain(
      'charge totals: authorized only, captured 800, refunded 300; held: 200 by refunds',
    );
  });

  it('shows control characters a provider or a person wrote escaped, never raw', () => {
    const escape = '\u001b]0;owned\u0007\u001b[2J';
    const shown = '\\u001b]0;owned\\u0007\\u001b[2J';
    const found: KeyInspection = {
      merchantId: 'm_1',
      operation: 'charge',
      key: 'k-1',
      recoveryPoint: 'failed',
      request: null,
      requestHash: 'h',
      attempts: 6,
      lease: { held: false, remainingMs: 0, until: null },
      lastError: `provider said ${escape}`,
      charge: null,
      movement: null,
      outcome: null,
      createdAt: at,
      updatedAt: at,
      completedAt: null,
      failedAt: at,
      history: [{ at, event: 'parked', detail: `because ${escape}` }],
      audit: [
        {
          id: '1',
          at,
          action: 'resolve',
          result: 'declined',
          actor: `ops${escape}`,
          reason: `checked ${escape}`,
          chargeId: 'c',
          movementId: null,
          providerChargeId: `ch_${escape}`,
          declineCode: 'card_declined',
          providerMovementId: null,
          failureCode: null,
          parkedAt: at,
          parkedReason: null,
        },
      ],
    };
    for (const tty of [true, false]) {
      const lines = renderInspection(found, { tty, columns: 200 });
      // eslint-disable-next-line no-control-regex -- what must not be printed
      expect(lines.filter((line) => /[\u0000-\u001f\u007f-\u009f]/.test(line))).toEqual([]);
      expect(lines.join('\n')).toContain(`provider said ${shown}`);
      expect(lines.join('\n')).toContain(`by ops${shown}: checked ${shown}`);
      expect(lines.join('\n')).toContain(`provider charge ch_${shown}`);
    }
    const listed = renderKeyList(
      [
        {
          merchantId: 'm_1',
          operation: 'charge',
          key: 'k-1',
          recoveryPoint: 'failed',
          chargeId: 'c',
          chargeStatus: 'reserved',
          attempts: 6,
          leaseHeld: false,
          lastError: escape,
          responseStatus: null,
          createdAt: at,
          updatedAt: at,
        },
      ],
      { tty: false, columns: 200 },
    );
    expect(listed[0]!.split('\t').at(-2)).toBe(shown);
  });
});
