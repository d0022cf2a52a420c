import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

describe('embedded PostgreSQL', () => {
  it('leaves the exit code a process set (a failed run must not exit 0)', async () => {
    const result = await run(process.execPath, [
      '--import',
      'tsx',
      'test/fixtures/exitCodeAfterEmbedded.ts',
    ]).then(
      () => ({ code: 0 }),
      (error: { code: number }) => ({ code: error.code }),
    );
    expect(result.code).toBe(3);
  });
});
