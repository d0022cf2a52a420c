import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** Runs the command; resolves with its exit code and output, whatever the code. */
async function cli(...args: string[]) {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: '' },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

/** What a command says of a --database-url that is not a PostgreSQL URL (never the value). */
const NOT_A_URL =
  '--database-url must be a PostgreSQL connection string of the form ' +
  'postgres://user:password@host:port/database';

const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };

describe('chargeonce command line', () => {
  it.each(['--version', '-v'])('%s prints the package version', async (flag) => {
    const result = await cli(flag);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it.each(['--version', '-v'])('%s --json prints the version as a JSON object', async (flag) => {
    const result = await cli(flag, '--json');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout)).toEqual({ version });
    expect(result.stdout).toBe(`${JSON.stringify({ version })}\n`);
  });

  it.each(['--help', '-h'])('%s prints the usage and exits 0', async (flag) => {
    const result = await cli(flag);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: chargeonce <command>/);
    expect(result.stdout).toContain('--version');
  });

  it.each([
    [['--bogus'], 'unknown option --bogus', 'chargeonce --help'],
    [['status', '-x'], 'unknown option -x', 'chargeonce --help'],
    [
      ['status', '--limit'],
      'option --limit needs a value (--limit=VALUE for one that starts with a dash)',
      'chargeonce --help',
    ],
    [['reap', '--json=yes'], 'option --json takes no value', 'chargeonce --help'],
    [
      ['chaos', '--charges-count', '5'],
      'unknown option --charges-count',
      'chargeonce chaos --help',
    ],
    [['conformance', 'extra'], "unexpected argument 'extra'", 'chargeonce conformance --help'],
    [['conformance'], 'conformance needs --provider MODULE', 'chargeonce conformance --help'],
    [
      ['conformance', '--provider', 'x.mjs', '--budget-ms', '0'],
      '--budget-ms must be a positive integer, got 0',
      'chargeonce conformance --help',
    ],
    [['status', 'extra'], "unexpected argument 'extra'", 'chargeonce --help'],
    [
      ['sweep', '--database-url', 'postgres://127.0.0.1:1/x'],
      'sweep needs --provider <module>: the adapter it asks about abandoned charges',
      'chargeonce --help',
    ],
    [['status'], '--database-url (or DATABASE_URL) is required', 'chargeonce --help'],
    [['status', '--database-url', 'mysql://h/db'], NOT_A_URL, 'chargeonce --help'],
    [['inspect', '--database-url', 'h:5432/db'], NOT_A_URL, 'chargeonce inspect --help'],
    [['migrate', '--database-url', 'nope'], NOT_A_URL, 'chargeonce migrate --help'],
    [['chaos', '--database-url', 'nope'], NOT_A_URL, 'chargeonce chaos --help'],
    [
      ['chaos', '--charges', 'abc'],
      '--charges must be an integer, got abc',
      'chargeonce chaos --help',
    ],
    [
      ['chaos', '--error-rate', '2'],
      '--error-rate must be a number in [0, 1], got 2',
      'chargeonce chaos --help',
    ],
  ])('%j: says what was wrong, where the usage is, and exits 2', async (args, message, help) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`chargeonce: ${message}\nRun '${help}' for usage.\n`);
  });

  it.each([
    [['--bogus', '--json'], 'unknown option --bogus', 'chargeonce --help'],
    [
      ['status', '--json', '--limit'],
      'option --limit needs a value (--limit=VALUE for one that starts with a dash)',
      'chargeonce --help',
    ],
    [
      ['list', '--json', '--point'],
      'option --point needs a value (--point=VALUE for one that starts with a dash)',
      'chargeonce list --help',
    ],
    [['list', '--json'], '--database-url (or DATABASE_URL) is required', 'chargeonce list --help'],
    [
      ['chaos', '--json', '--charges-count', '5'],
      'unknown option --charges-count',
      'chargeonce chaos --help',
    ],
    [
      ['chaos', '--json', '--workers', '1.5'],
      '--workers must be an integer, got 1.5',
      'chargeonce chaos --help',
    ],
    [
      ['status', '--json', '--database-url', 'postgres://127.0.0.1:1/x', '--limit', 'abc'],
      '--limit must be an integer from 1 up, got abc',
      'chargeonce --help',
    ],
    [
      ['status', '--json', '--database-url', 'postgres://127.0.0.1:1/x', '--limit', '0'],
      '--limit must be an integer from 1 up, got 0',
      'chargeonce --help',
    ],
  ])('%j: under --json, one JSON object on stderr and exit 2', async (args, message, help) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`${JSON.stringify({ error: { code: 'usage', message, help } })}\n`);
  });

  it('a DATABASE_URL that is not a PostgreSQL URL is refused under its own name', async () => {
    const result = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'list'], {
      env: { ...process.env, DATABASE_URL: 'localhost:5432' },
    }).catch((error: { code: number; stderr: string }) => error);

    expect(result).toMatchObject({ code: 2 });
    expect(result.stderr).toContain('DATABASE_URL must be a PostgreSQL connection string');
    expect(result.stderr).not.toContain('localhost');
  });

  it('chaos: a setting out of range is refused before a database is started', async () => {
    const result = await cli('chaos', '--charges', '10', '--movement-rate', '0.95');

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('movementRate must be in [0, 0.9]');
    expect(result.stderr).toContain("Run 'chargeonce chaos --help' for usage.");
    expect(result.stderr).not.toContain('starting an embedded PostgreSQL');
  });

  it('under --json, no command or an unknown one is a JSON error and exit 2', async () => {
    const none = await cli('--json');
    const unknown = await cli('explode', '--json', '--database-url', 'postgres://127.0.0.1:1/x');

    expect(none).toMatchObject({ code: 2, stdout: '' });
    expect(JSON.parse(none.stderr)).toEqual({
      error: { code: 'usage', message: 'no command given', help: 'chargeonce --help' },
    });
    expect(unknown).toMatchObject({ code: 2, stdout: '' });
    expect(JSON.parse(unknown.stderr)).toEqual({
      error: { code: 'usage', message: 'unknown command explode', help: 'chargeonce --help' },
    });
  });

  it('an unknown command is said first, before any missing option', async () => {
    // No --database-url and no DATABASE_URL: the command is what is wrong.
    const plain = await cli('explode');
    // Its options are not judged by another command's rules.
    const withOptions = await cli('chaso', '--charges', '5');
    const json = await cli('explode', 'now', '--json');

    expect(plain).toMatchObject({ code: 2, stdout: '' });
    expect(plain.stderr).toMatch(/^Unknown command: explode\n\nUsage:/);
    expect(withOptions).toMatchObject({ code: 2, stdout: '' });
    expect(withOptions.stderr).toMatch(/^Unknown command: chaso\n/);
    expect(JSON.parse(json.stderr)).toEqual({
      error: { code: 'usage', message: 'unknown command explode', help: 'chargeonce --help' },
    });
  });

  it('no command at all: the usage on stderr, nothing on stdout, exit 2', async () => {
    const result = await cli();

    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(/^Usage: chargeonce <command>/);
  });

  it.each([
    [
      'a module that does not exist',
      'test/fixtures/no-such-provider.mjs',
      /--provider test\/fixtures\/no-such-provider\.mjs could not be loaded: Cannot find module/,
    ],
    [
      'a module without a provider',
      'src/packageRoot.ts',
      /src\/packageRoot\.ts must export as default a PaymentProvider \(createCharge and findCharge\)/,
    ],
    [
      'a module whose factory throws',
      'test/fixtures/throwingProvider.mjs',
      /--provider test\/fixtures\/throwingProvider\.mjs threw as it made its provider: STRIPE_SECRET_KEY is not set/,
    ],
  ])(
    '--provider naming %s is refused as configuration, exit 2, before connecting',
    async (_name, module, message) => {
      // The database is out of reach: had it connected first, it would have failed with exit 1.
      const unreachable = ['--database-url', 'postgres://127.0.0.1:1/x'];
      const resolve = await cli(
        'resolve',
        ...unreachable,
        ...['--merchant', 'm_1', '--key', 'k_1', '--outcome', 'cancelled'],
        ...['--actor', 'ada', '--reason', 'checked', '--provider', module],
      );
      const sweep = await cli('sweep', ...unreachable, '--provider', module, '--json');
      const conformance = await cli('conformance', '--provider', module);

      expect(resolve.code).toBe(2);
      expect(resolve.stderr).toMatch(message);
      expect(sweep.code).toBe(2);
      expect(JSON.parse(sweep.stderr)).toMatchObject({ error: { code: 'invalid_configuration' } });
      expect(conformance.code).toBe(2);
      expect(conformance.stderr).toMatch(message);
    },
  );

  it("a negative number after an option is its value, refused by the option's own rule", async () => {
    const result = await cli('reap', '--database-url', 'postgres://127.0.0.1:1/x', '--limit', '-5');

    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "chargeonce: --limit must be an integer from 1 up, got -5\nRun 'chargeonce --help' for usage.\n",
    );
  });
});
