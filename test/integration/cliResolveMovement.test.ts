import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  ProviderAnswerInvalidError,
  type ChargeEngine,
  type KeyInspection,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { withWrongMovementAnswers } from '../support/wrongMovementAnswers.js';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aKey, aRequest } from '../support/charges.js';

const run = promisify(execFile);
let db: TestDatabase;
let engine: ChargeEngine;
let dir: string;
let providerModule: string;
const fake = createFakeProvider();
let answerWrongly = false;

/** The fake provider; while `answerWrongly`, a refund's answer is for another amount. */
const provider = withWrongMovementAnswers(fake, () => answerWrongly);

beforeAll(async () => {
  db = await createTestDatabase();
  engine = createChargeEngine({ pool: db.pgPool, provider });
  await db.pool.query(sql.unsafe`CREATE TABLE hook_log (key text NOT NULL, kind text NOT NULL)`);
  // What `sweep --provider` loads: a provider and the hooks that go with it, a refund's included.
  dir = await mkdtemp(join(tmpdir(), 'chargeonce-cli-resolve-movement-'));
  providerModule = join(dir, 'provider.mjs');
  await writeFile(
    providerModule,
    `export default () => ({
  createCharge: () => Promise.reject(new Error('not here')),
  findCharge: () => Promise.resolve(null),
});
export const hooks = {
  refund: {
    complete: (tx, ctx) => tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, 'refund.' + ctx.status]),
    cancel: (tx, ctx) => tx.query('INSERT INTO hook_log (key, kind) VALUES ($1, $2)', [ctx.key, 'refund.cancelled']),
  },
};
`,
  );
});
afterAll(async () => {
  await engine.close();
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

/** A refund of 300 of a charge of 1000, parked on an answer for another amount. */
async function aParkedRefund(merchantId: string) {
  const charge = await engine.processCharge(aKey(), aRequest({ merchantId, amountMinor: 1000 }));
  const key = aKey();
  const request = { merchantId, chargeId: charge.chargeId, amountMinor: 300 };
  answerWrongly = true;
  try {
    await expect(engine.processRefund(key, request)).rejects.toBeInstanceOf(
      ProviderAnswerInvalidError,
    );
  } finally {
    answerWrongly = false;
  }
  return { chargeId: charge.chargeId, key, request };
}

async function refundedMinor(chargeId: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ refunded: z.number() }))`
    SELECT refunded_minor::float8 AS refunded FROM ${db.tables.charges}
    WHERE id = ${chargeId}::uuid`);
}

async function hooksRun(key: string): Promise<readonly string[]> {
  return db.pool.anyFirst(sql.type(z.object({ kind: z.string() }))`
    SELECT kind FROM hook_log WHERE key = ${key}`);
}

describe('chargeonce resolve --operation refund', () => {
  it('resolves a parked refund end to end: stored, refunded, hooks run, replayed, inspected', async () => {
    const merchantId = 'm_cli_rm';
    const succeeded = await aParkedRefund(merchantId);
    const failed = await aParkedRefund(merchantId);
    const resolve = (key: string, ...extra: string[]) =>
      cli(
        'resolve',
        '--merchant',
        merchantId,
        '--operation',
        'refund',
        '--key',
        key,
        '--actor',
        'ada',
        '--reason',
        'dashboard',
        ...extra,
      );

    const json = await resolve(
      succeeded.key,
      '--outcome',
      'succeeded',
      '--provider-refund-id',
      're_cli',
      '--provider',
      providerModule,
      '--json',
    );
    const plain = await resolve(
      failed.key,
      '--outcome',
      'failed',
      '--provider-refund-id',
      're_cli_failed',
      '--failure-code',
      'lost_card',
      '--no-hooks',
    );
    const again = await resolve(succeeded.key, '--outcome', 'cancelled', '--no-hooks');

    expect(json.code).toBe(0);
    const printed = JSON.parse(json.stdout) as {
      outcome: { body: string; refundId: string };
      audit: unknown;
    };
    // What engine.resolve returns, its kind included.
    expect(printed).toMatchObject({
      kind: 'refund',
      outcome: {
        status: 'succeeded',
        httpStatus: 201,
        chargeId: succeeded.chargeId,
        providerRefundId: 're_cli',
      },
      audit: { action: 'resolve', result: 'succeeded', actor: 'ada', providerMovementId: 're_cli' },
    });
    expect(await hooksRun(succeeded.key)).toEqual(['refund.succeeded']);
    expect(await refundedMinor(succeeded.chargeId)).toBe(300);
    // A retry of the key replays what the command stored.
    expect(await engine.processRefund(succeeded.key, succeeded.request)).toMatchObject({
      replayed: true,
      status: 'succeeded',
      body: printed.outcome.body,
      refundId: printed.outcome.refundId,
    });

    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(
      new RegExp(
        `^resolved: ${merchantId} refund ${failed.key} failed \\(HTTP 402, refund [0-9a-f-]{36} of charge ${failed.chargeId}, provider refund re_cli_failed\\) by ada\\n$`,
      ),
    );
    expect(await hooksRun(failed.key)).toEqual([]);
    expect(await refundedMinor(failed.chargeId)).toBe(0);

    expect(again.code).toBe(1);
    expect(again.stderr).toContain('key_not_resolvable');
    expect(await refundedMinor(succeeded.chargeId)).toBe(300);

    const inspected = await cli(
      'inspect',
      '--merchant',
      merchantId,
      '--operation',
      'refund',
      '--key',
      succeeded.key,
    );
    expect(inspected.stdout).toContain('audit: ');
    expect(inspected.stdout).toMatch(/resolve succeeded \(provider refund re_cli\) by ada/);
  });

  it("refuses a charge's fields on a refund key, writing nothing", async () => {
    const merchantId = 'm_cli_rm_input';
    const parked = await aParkedRefund(merchantId);

    const wrong = await cli(
      'resolve',
      '--merchant',
      merchantId,
      '--operation',
      'refund',
      '--key',
      parked.key,
      '--outcome',
      'succeeded',
      '--provider-charge-id',
      'ch_1',
      '--actor',
      'ada',
      '--reason',
      'r',
      '--no-hooks',
    );

    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('invalid_request');
    expect(wrong.stderr).toContain('providerRefundId');
    expect(wrong.stderr).toContain('providerChargeId');
    const inspected = JSON.parse(
      (
        await cli(
          'inspect',
          '--merchant',
          merchantId,
          '--operation',
          'refund',
          '--key',
          parked.key,
          '--json',
        )
      ).stdout,
    ) as KeyInspection;
    expect(inspected.recoveryPoint).toBe('failed');
    expect(inspected.audit).toEqual([]);
  });

  it('a refund key asked for without --operation: no such key, and where it is', async () => {
    const merchantId = 'm_cli_rm_where';
    const { key } = await aParkedRefund(merchantId);

    const inspected = await cli('inspect', '--merchant', merchantId, '--key', key);
    const requeued = await cli(
      'requeue',
      ...['--merchant', merchantId, '--key', key, '--actor', 'ada', '--reason', 'r'],
    );
    const resolved = await cli(
      'resolve',
      ...['--merchant', merchantId, '--key', key, '--outcome', 'cancelled'],
      ...['--actor', 'ada', '--reason', 'r', '--no-hooks'],
    );
    const nowhere = await cli('inspect', '--merchant', merchantId, '--key', 'no-such-key');

    expect(inspected).toMatchObject({
      code: 1,
      stdout: `no such key: ${merchantId} ${key} (there is one under --operation refund, at failed)\n`,
    });
    expect(requeued).toMatchObject({
      code: 1,
      stdout: `not requeued: no failed key ${merchantId} ${key} (there is one under --operation refund, at failed)\n`,
    });
    expect(resolved).toMatchObject({ code: 1, stdout: '' });
    expect(resolved.stderr).toContain(
      `chargeonce: ${merchantId} ${key} (there is one under --operation refund, at failed)\n`,
    );
    expect(resolved.stderr).toContain('There is no such key.');
    expect(nowhere).toMatchObject({ code: 1, stdout: `no such key: ${merchantId} no-such-key\n` });
  });

  it('says in its usage that refund and capture keys are resolved too', async () => {
    const help = await cli('resolve', '--help');

    expect(help.code).toBe(0);
    for (const option of ['--provider-refund-id', '--provider-capture-id', '--failure-code']) {
      expect(help.stdout).toContain(option);
    }
    expect(help.stdout).toContain('succeeded, failed or cancelled');
  });
});
