import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

/**
 * The folder that holds chargeonce's package.json: the repository, or `node_modules/chargeonce`.
 *
 * Files that ship beside the code (`migrations/`, the chaos worker) are found from here rather
 * than relative to the calling module, because the build bundles modules into files at other
 * depths than in `src/` (`dist/index.js`, `dist/testing/index.cjs`, shared chunks).
 *
 * @throws {Error} when no chargeonce package.json is above this module (chargeonce was bundled
 * into another program, which leaves its migrations behind).
 */
export function packageRoot(): string {
  if (found !== undefined) return found;
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    if (isChargeOncePackage(join(dir, 'package.json'))) return (found = dir);
    if (dirname(dir) === dir) {
      throw new Error(
        `chargeonce's package.json was not found above ${start}: chargeonce must run from its package (not bundled), beside its migrations/`,
      );
    }
  }
}

function isChargeOncePackage(path: string): boolean {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown }).name === 'chargeonce';
  } catch {
    return false;
  }
}
