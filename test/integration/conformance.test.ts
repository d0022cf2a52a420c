import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { ConformanceReport } from '../../src/conformance/runConformance.js';

const run = promisify(execFile);

/** `chargeonce conformance --provider <fixture> --json`: its exit code and report. */
async function conformance(fixture: string): Promise<{ code: number; report: ConformanceReport }> {
  const args = ['--import', 'tsx', 'src/cli.ts', 'conformance', '--json', '--provider'];
  const result = await run(process.execPath, [...args, `test/fixtures/conformance/${fixture}`], {
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code?: number; stdout?: string }) => ({
      code: error.code ?? -1,
      stdout: error.stdout ?? '',
    }),
  );
  return { code: result.code, report: JSON.parse(result.stdout) as ConformanceReport };
}

const results = (report: ConformanceReport) =>
  Object.fromEntries(report.checks.map((c) => [c.name, c.result]));

const REFUND_CHECK = 'refunds: partial, deduped, found, never past the capture';
const CAPTURE_CHECK = 'captures: authorize only, capture part once, found';

describe('chargeonce conformance', { timeout: 60_000 }, () => {
  it('passes every check on the Stripe adapter against the emulator', async () => {
    const { code, report } = await conformance('stripeAdapter.ts');

    expect(report.checks.filter((c) => c.result !== 'pass')).toEqual([]);
    expect(report.checks).toHaveLength(11);
    expect(results(report)).toMatchObject({ [REFUND_CHECK]: 'pass', [CAPTURE_CHECK]: 'pass' });
    expect(code).toBe(0);
  });

  it('passes every check on the HTTP adapter over the fake provider server', async () => {
    const { code, report } = await conformance('httpFakeAdapter.ts');

    expect(report.checks.filter((c) => c.result !== 'pass')).toEqual([]);
    expect(code).toBe(0);
  });

  it('passes the in-memory fake, skipping what its fixture cannot cause', async () => {
    const { code, report } = await conformance('inMemoryFake.ts');

    expect(report.checks.filter((c) => c.result === 'fail')).toEqual([]);
    expect(results(report)).toMatchObject({
      'permanent failures are not ProviderTransientError': 'skip',
      'dedupe on providerKey': 'pass',
      'findCharge after a lost answer': 'pass',
      [REFUND_CHECK]: 'pass',
      [CAPTURE_CHECK]: 'pass',
    });
    expect(code).toBe(0);
  });

  it('fails a broken adapter, check by check, and exits 1', async () => {
    const { code, report } = await conformance('brokenAdapter.ts');

    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    expect(results(report)).toMatchObject({
      'amounts and currencies echoed': 'fail',
      'dedupe on providerKey': 'fail',
      'findCharge after a lost answer': 'fail',
      'AbortSignal honoured within 500 ms': 'fail',
      'transient failures are ProviderTransientError': 'fail',
    });
    expect(results(report)[REFUND_CHECK]).toBe('fail');
    // An adapter that cannot capture is not asked about captures.
    expect(results(report)).not.toHaveProperty(CAPTURE_CHECK);
  });

  it('fails an adapter that names two refunds of one charge alike, saying so', async () => {
    const { code, report } = await conformance('refundsNamedByCharge.ts');

    expect(code).toBe(1);
    const refunds = report.checks.find((c) => c.name === REFUND_CHECK);
    expect(refunds).toMatchObject({ result: 'fail' });
    expect(JSON.stringify(refunds)).toContain('two refunds of one charge answered with one id');
    expect(results(report)['dedupe on providerKey']).toBe('pass');
  });

  it('refuses a provider module without a `conformance` fixture as configuration: exit 2', async () => {
    const args = ['--import', 'tsx', 'src/cli.ts', 'conformance', '--provider'];
    const failure = await run(process.execPath, [
      ...args,
      'test/fixtures/forgetfulProvider.ts',
    ]).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({
        code: error.code ?? -1,
        stderr: error.stderr ?? '',
      }),
    );
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain('must export `conformance`');
  });
});
