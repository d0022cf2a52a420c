import { describeError, errorJson } from './describeError.js';
import { UsageError } from './parseCommandArgs.js';

/**
 * Whether the command line asks for JSON: `--json` among its options (not after `--`). Read from
 * the arguments themselves, so that an error in parsing them is reported as JSON too.
 */
export function wantsJson(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json');
}

/**
 * What the command writes on stderr when it fails: under `--json` one JSON object on one line
 * (`{"error":{"code":…,"message":…}}`, see `errorJson`); else `chargeonce: ` and the error with
 * its causes, or for a wrong command line what was wrong and where the usage is.
 */
export function renderError(error: unknown, json: boolean): string {
  if (json) return `${JSON.stringify(errorJson(error))}\n`;
  if (error instanceof UsageError) {
    return `chargeonce: ${error.message}\nRun '${error.helpCommand}' for usage.\n`;
  }
  // The whole cause chain: "store_unavailable" alone does not say which address refused.
  return `chargeonce: ${describeError(error).join('\n')}\n`;
}
