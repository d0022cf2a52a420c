import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../packageRoot.js';

/** The version in chargeonce's own package.json (the one `npx chargeonce` runs from). */
export function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  if (typeof version !== 'string') throw new Error("chargeonce's package.json has no version");
  return version;
}
