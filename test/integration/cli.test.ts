import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createEmptyDatabase,
  createTestDatabase,
  type TestDatabase,
} from '../support/testDatabase.js';
import { aRequest, seedAbandonedKeys } from '../support/charges.js';
import { failKey } from '../../src/store/failKey.js';
import { declareRetention } from '../../src/store/retentionWindows.js';
import { closedPortUrl } from '../support/closedPortUrl.js';

const run = promisify(execFile);
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

async function cli(...args: string[]) {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: '' },
  });
}

describe('chargeonce command', () => {
  it('status, sweep and reap against --database-url', async () => {
    await seedAbandonedKeys(db.pool, db.tables, 4, aRequest({ merchantId: 'm_cli' }));

    const before = JSON.parse((await cli('status', '--database-url', db.url, '--json')).stdout) as {
      byRecoveryPoint: Record<string, number>;
      abandoned: number;
    };
    expect(before.byRecoveryPoint.reserved).toBe(4);
    expect(before.abandoned).toBe(4);

    const swept = await cli(
      'sweep',
      '--database-url',
      db.url,
      '--provider',
      'test/fixtures/emptyProvider.mjs',
      '--grace-ms',
      '0',
      '--json',
    );
    expect(JSON.parse(swept.stdout)).toMatchObject({ examined: 4, cancelled: 4 });

    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET completed_at = now() - interval '100 hours'
      WHERE merchant_id = 'm_cli'`);
    const reaped = await cli('reap', '--database-url', db.url, '--json');
    // With the windows it kept keys for: its own, the defaults (no serving engine recorded any).
    expect(JSON.parse(reaped.stdout)).toEqual({
      reaped: 4,
      retentionMs: 72 * 3_600_000,
      tombstoneRetentionMs: 30 * 86_400_000,
    });
    // A shorter window asked for does not lower what a serving engine recorded; the line says so.
    await declareRetention(db.pool, db.tables, 'charge', {
      retentionMs: 72 * 3_600_000,
      tombstoneRetentionMs: 30 * 86_400_000,
    });
    try {
      const shorter = await cli('reap', '--database-url', db.url, '--retention-ms', '1000');
      expect(shorter.stdout).toBe(
        'reaped to tombstones: 0 (completed keys kept 3 d, tombstones 30 d: the longest windows ' +
          'recorded in retention_windows)\n',
      );
    } finally {
      await db.pool.query(sql.unsafe`DELETE FROM ${db.tables.retentionWindows}`);
    }

    // Tombstones stay, so a late retry is refused rather than charged again.
    const left = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM ${db.tables.keys}
      WHERE merchant_id = 'm_cli' AND recovery_point = 'expired'`);
    expect(left).toBe(4);
    const human = await cli('status', '--database-url', db.url);
    expect(human.stdout).toContain('abandoned (no lease held): 0');
  });

  it('status: one line per stuck key, its reason flattened, a refund key named as one', async () => {
    const merchantId = 'm_cli_stuck';
    const [seed] = await seedAbandonedKeys(
      db.pool,
      db.tables,
      1,
      aRequest({ merchantId }),
      'refund',
    );
    const key = seed!.key;
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET lock_token = NULL, locked_until = NULL
      WHERE merchant_id = ${merchantId} AND key = ${key}`);
    const reason = 'provider answered id "x\tid\nnext-line"';
    const scoped = { merchantId, operation: 'refund', key };
    expect(await failKey(db.pool, db.tables, { ...scoped, lockToken: randomUUID(), reason })).toBe(
      true,
    );

    const { stdout } = await cli('status', '--database-url', db.url);
    const lines = stdout.split('\n').filter((line) => line.includes(key));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`(refund ${seed!.chargeId}, `);
    expect(lines[0]).toContain('provider answered id "x id next-line"');
  });

  it('fails with a message and exit code 2 on bad usage', async () => {
    const error = (await cli('sweep', '--database-url', db.url).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(error.code).toBe(2);
    expect(error.stderr).toContain('--provider');
    const unknown = (await cli('explode', '--database-url', db.url).catch((e: unknown) => e)) as {
      code: number;
    };
    expect(unknown.code).toBe(2);
  });

  it('sweeps the keys of the operation named by --operation, and only those', async () => {
    const merchantId = 'm_cli_refund';
    await seedAbandonedKeys(db.pool, db.tables, 3, aRequest({ merchantId }), 'payout');
    const sweep = (...extra: string[]) =>
      cli(
        'sweep',
        '--database-url',
        db.url,
        '--provider',
        'test/fixtures/emptyProvider.mjs',
        '--grace-ms',
        '0',
        '--json',
        ...extra,
      );

    const charges = JSON.parse((await sweep()).stdout) as { examined: number };
    const payouts = JSON.parse((await sweep('--operation', 'payout')).stdout) as object;

    expect(charges.examined).toBe(0);
    expect(payouts).toMatchObject({ examined: 3, cancelled: 3 });
    const left = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM ${db.tables.keys}
      WHERE merchant_id = ${merchantId} AND recovery_point IN ('started', 'reserved')`);
    expect(left).toBe(0);
  });

  it('reap honours --tombstone-retention-ms: tombstones past it are deleted', async () => {
    await seedAbandonedKeys(db.pool, db.tables, 2, aRequest({ merchantId: 'm_cli_tomb' }));
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET recovery_point = 'completed', response_status = 201,
        response_body = '{}', lock_token = NULL, locked_until = NULL,
        completed_at = now() - interval '100 hours'
      WHERE merchant_id = 'm_cli_tomb'`);
    const count = () =>
      db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int4 AS n FROM ${db.tables.keys} WHERE merchant_id = 'm_cli_tomb'`);

    await cli('reap', '--database-url', db.url, '--retention-ms', '1000');
    expect(await count()).toBe(2); // tombstones, kept for 30 days by default
    await cli(
      'reap',
      '--database-url',
      db.url,
      '--retention-ms',
      '1000',
      '--tombstone-retention-ms',
      String(99 * 3_600_000),
    );
    expect(await count()).toBe(0);
  });

  it('refuses --operation where it would change nothing (reap and status cover every operation)', async () => {
    const error = (await cli('reap', '--database-url', db.url, '--operation', 'payout').catch(
      (e: unknown) => e,
    )) as { code: number; stderr: string };
    expect(error.code).toBe(2);
    expect(error.stderr).toContain('--operation');
  });

  it('requeues a failed key with requeue --merchant --key [--operation]; exit 1 when none matched', async () => {
    const merchantId = 'm_cli_requeue';
    const [parked] = await seedAbandonedKeys(
      db.pool,
      db.tables,
      1,
      aRequest({ merchantId }),
      'payout',
    );
    await db.pool.query(sql.unsafe`
      UPDATE ${db.tables.keys} SET recovery_point = 'failed', lock_token = NULL, locked_until = NULL,
        last_error = 'provider kept failing'
      WHERE merchant_id = ${merchantId}`);
    const requeue = (...extra: string[]) =>
      cli(
        'requeue',
        '--database-url',
        db.url,
        '--merchant',
        merchantId,
        '--key',
        parked!.key,
        '--actor',
        'ops',
        '--reason',
        'provider fixed',
        ...extra,
      );

    const wrongOperation = (await requeue().catch((e: unknown) => e)) as {
      code: number;
      stdout: string;
    };
    const requeued = await requeue('--operation', 'payout');
    const again = (await requeue('--operation', 'payout').catch((e: unknown) => e)) as {
      code: number;
      stdout: string;
    };

    expect(wrongOperation.code).toBe(1);
    expect(wrongOperation.stdout).toContain('not requeued');
    expect(requeued.stdout.trim()).toBe(`requeued: ${merchantId} payout ${parked!.key}`);
    expect(again.code).toBe(1);
    const point = await db.pool.oneFirst(sql.type(z.object({ recovery_point: z.string() }))`
      SELECT recovery_point FROM ${db.tables.keys} WHERE merchant_id = ${merchantId}`);
    expect(point).toBe('reserved');
  });

  it('prints the cause of an error: an unreachable database says what refused it', async () => {
    const url = await closedPortUrl();
    const error = (await cli('status', '--database-url', url).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };

    expect(error.code).toBe(1);
    expect(error.stderr).toContain('store_unavailable');
    expect(error.stderr).toMatch(/caused by: .*ECONNREFUSED/);
    expect(error.stderr).toContain(new URL(url).port);
  });

  it('--json: an error is one JSON object on stderr, its causes included, with the same exit code', async () => {
    const url = await closedPortUrl();
    const error = (await cli('status', '--database-url', url, '--json').catch(
      (e: unknown) => e,
    )) as {
      code: number;
      stdout: string;
      stderr: string;
    };

    expect(error.code).toBe(1);
    expect(error.stdout).toBe('');
    expect(error.stderr.trimEnd().split('\n')).toHaveLength(1);
    const { error: reported } = JSON.parse(error.stderr) as {
      error: { code: string; message: string; causes: Array<{ code?: string; message: string }> };
    };
    expect(reported).toMatchObject({
      code: 'store_unavailable',
      message: 'The idempotency store is unavailable.',
    });
    expect(reported.causes.map((cause) => cause.message).join('\n')).toContain(new URL(url).port);
    expect(reported.causes.some((cause) => cause.message.includes('ECONNREFUSED'))).toBe(true);
  });

  it('an unmigrated --schema: says to run chargeonce migrate with that --schema, which fixes it', async () => {
    const status = (...extra: string[]) =>
      cli('status', '--database-url', db.url, '--schema', 'nosuch', ...extra).catch(
        (e: unknown) => e as { code: number; stdout: string; stderr: string },
      );

    const plain = await status();
    const json = await status('--json');

    expect(plain).toMatchObject({ code: 1, stdout: '' });
    expect(plain.stderr).toContain(
      `chargeonce: schema_not_migrated: The database is not migrated: chargeonce's tables or columns are missing from schema "nosuch". Run 'chargeonce migrate --schema nosuch' on this database first.`,
    );
    expect(plain.stderr).not.toContain('migrate(pool');
    expect(json).toMatchObject({ code: 1, stdout: '' });
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: {
        code: 'schema_not_migrated',
        schema: 'nosuch',
        message: `The database is not migrated: chargeonce's tables or columns are missing from schema "nosuch". Run 'chargeonce migrate --schema nosuch' on this database first.`,
      },
    });

    await cli('migrate', '--database-url', db.url, '--schema', 'nosuch');
    const migrated = await status('--json');
    expect(JSON.parse(migrated.stdout)).toMatchObject({ byRecoveryPoint: { failed: 0 } });
  });

  it("an unmigrated database in the default schema: says to run 'chargeonce migrate'", async () => {
    const empty = await createEmptyDatabase();
    try {
      const error = (await cli('status', '--database-url', empty.url).catch((e: unknown) => e)) as {
        code: number;
        stderr: string;
      };

      expect(error.code).toBe(1);
      expect(error.stderr).toContain(
        `from schema "chargeonce". Run 'chargeonce migrate' on this database first.`,
      );
    } finally {
      await empty.drop();
    }
  });
});
