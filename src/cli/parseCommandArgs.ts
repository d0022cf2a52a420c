import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * The command line was wrong: `cli.ts` prints the message with where to find the usage, and
 * exits 2. Nothing ran.
 */
export class UsageError extends Error {
  /** The usage to point at: `chargeonce --help`, or `chargeonce chaos --help`. */
  readonly helpCommand: string;

  constructor(message: string, command: string | undefined) {
    super(message);
    this.name = 'UsageError';
    this.helpCommand = command ? `chargeonce ${command} --help` : 'chargeonce --help';
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `parseArgs`, strict, whose refusals say in plain words what was wrong ("unknown option
 * --verbose") instead of the parser's text. Every command parses its arguments with it.
 *
 * A negative number after an option that takes a value is its value (`--limit -5`), for the
 * command to refuse with what the value must be; any other value starting with a dash is written
 * `--option=VALUE`.
 *
 * @param how.command the command whose options these are, named in the usage hint
 * (`chargeonce <command> --help`); none for the top level
 * @param how.allowPositionals whether bare arguments are taken (the top level's command name)
 * @throws {UsageError} an unknown option, a missing or unexpected value, an unexpected argument.
 */
export function parseCommandArgs<T extends Options>(
  args: string[],
  options: T,
  how: { command?: string; allowPositionals?: boolean } = {},
) {
  const allowPositionals = how.allowPositionals ?? false;
  const taken = negativeNumbersAsValues(args, options);
  try {
    return parseArgs({ args: taken, options, strict: true, allowPositionals });
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    throw new UsageError(describe(error, taken, options, allowPositionals), how.command);
  }
}

/** `-5`, `-0.5`, `-1e3`: a number below zero, as a person would type it. */
const NEGATIVE_NUMBER = /^-(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/**
 * `args` with a negative number after a string option joined to it (`--limit -5` becomes
 * `--limit=-5`): no option is a digit, so `-5` can only be the value, and the command's own check
 * then says what the value must be instead of the parser asking for one.
 */
function negativeNumbersAsValues(args: string[], options: Options): string[] {
  if (Object.values(options).some((option) => /^\d$/.test(option.short ?? ''))) return args;
  const tokens = tokensOf(args, options);
  const taken = [...args];
  // From the last, so that joining two arguments leaves the indexes before it as they were.
  for (const token of tokens.reverse()) {
    if (
      token.kind === 'option' &&
      Object.hasOwn(options, token.name) &&
      options[token.name]?.type === 'string' &&
      !token.inlineValue &&
      token.value !== undefined &&
      args[token.index] === token.rawName &&
      NEGATIVE_NUMBER.test(token.value)
    ) {
      taken.splice(token.index, 2, `--${token.name}=${token.value}`);
    }
  }
  return taken;
}

/** How the parser reads `args`, leniently: every option, value and positional as a token. */
function tokensOf(args: string[], options: Options) {
  return parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true }).tokens;
}

function isParseArgsError(error: unknown): error is Error & { code: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** The first thing wrong with `args`, found again on the parser's tokens. */
function describe(error: Error, args: string[], options: Options, allowPositionals: boolean) {
  const tokens = tokensOf(args, options);
  for (const token of tokens) {
    if (token.kind === 'positional' && !allowPositionals) {
      return `unexpected argument '${token.value}'`;
    }
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (option === undefined) return `unknown option ${token.rawName}`;
    const flag = `--${token.name}`;
    if (option.type === 'boolean' && token.value !== undefined) {
      return `option ${flag} takes no value`;
    }
    if (
      option.type === 'string' &&
      (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))
    ) {
      return `option ${flag} needs a value (${flag}=VALUE for one that starts with a dash)`;
    }
  }
  // A refusal the tokens do not explain: the parser's own first line.
  return error.message.split('\n')[0] ?? error.message;
}
