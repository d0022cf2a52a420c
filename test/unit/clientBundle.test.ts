import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

/** Packages that are database or server code: none may reach `chargeonce/client`. */
const FORBIDDEN_PACKAGES = ['slonik', 'pg', 'zod', 'currency-codes'];

/** The package an input of esbuild's metafile comes from, or null for the project's own files. */
function packageOf(input: string): string | null {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  return match?.[1] ?? null;
}

describe('chargeonce/client', () => {
  it('bundles for the browser with no database code in its import graph', async () => {
    const result = await build({
      entryPoints: ['src/client/index.ts'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });

    const inputs = Object.keys(result.metafile.inputs);
    const packages = new Set(inputs.map(packageOf).filter((name) => name !== null));
    expect(inputs).toContain('src/client/index.ts');
    for (const name of FORBIDDEN_PACKAGES) expect(packages).not.toContain(name);
    // Nor the project's own database or server code, which would drag those packages back.
    const ownFiles = inputs.filter((input) => packageOf(input) === null);
    expect(ownFiles.filter((file) => /^src\/(store|engine|http|request\.ts)/.test(file))).toEqual(
      [],
    );
  });
});
