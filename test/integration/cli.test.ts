import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createTestDatabase, type TestDatabase } from '../support/testDatabase.js';
import { aRequest, seedAbandonedKeys } from '../support/charges.js';

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
    expect(JSON.parse(reaped.stdout)).toEqual({ deleted: 4 });

    const left = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int4 AS n FROM ${db.tables.keys} WHERE merchant_id = 'm_cli'`);
    expect(left).toBe(0);
    const human = await cli('status', '--database-url', db.url);
    expect(human.stdout).toContain('abandoned (lease run out): 0');
  });

  it('fails with a message and exit code 1 on bad usage', async () => {
    const error = (await cli('sweep', '--database-url', db.url).catch((e: unknown) => e)) as {
      code: number;
      stderr: string;
    };
    expect(error.code).toBe(1);
    expect(error.stderr).toContain('--provider');
    const unknown = (await cli('explode', '--database-url', db.url).catch((e: unknown) => e)) as {
      code: number;
    };
    expect(unknown.code).toBe(2);
  });
});
