import { defineConfig, type Options } from 'tsup';

/** The public entry points: each ships as ESM (`.js`, `.d.ts`) and CommonJS (`.cjs`, `.d.cts`). */
const publicEntries = {
  index: 'src/index.ts',
  'http/index': 'src/http/index.ts',
  'client/index': 'src/client/index.ts',
  'testing/index': 'src/testing/index.ts',
  'stripe/index': 'src/stripe/index.ts',
};

const common: Options = {
  tsconfig: 'tsconfig.build.json',
  platform: 'node',
  target: 'node20',
  // Shared code goes into chunks, one copy per format: an error class thrown by the engine
  // (`chargeonce`) is the class the HTTP edge (`chargeonce/http`) checks with `instanceof`.
  splitting: true,
  // esbuild embeds the sources in each map (`sourcesContent`): stack traces and debuggers work
  // without `src/` in the package.
  sourcemap: true,
  removeNodeProtocol: false,
  // Every package stays a package, declared or not: an optional peer (@opentelemetry/api,
  // stripe) loaded by the user's copy, and an import of an undeclared package fails in the
  // consumer test instead of being bundled in silently.
  external: [/^[^./]/],
  dts: { entry: publicEntries },
};

export default defineConfig([
  {
    ...common,
    format: 'esm',
    entry: {
      ...publicEntries,
      // Processes and modules loaded by path, not imported: found from the package root.
      cli: 'src/cli.ts',
      'chaos/worker': 'src/chaos/worker.ts',
      'chaos/stripe/stripeChaosProvider': 'src/chaos/stripe/stripeChaosProvider.ts',
    },
  },
  {
    ...common,
    format: 'cjs',
    entry: publicEntries,
    // `import.meta.url` (the package root, the chaos worker) in CommonJS.
    shims: true,
    // Rollup, not esbuild, writes the CommonJS chunks then: it keeps `import(url)` of a provider
    // module (chaos) an `import()`, where esbuild's conversion makes it a `require` that cannot
    // load ESM or a file URL.
    treeshake: true,
    // p-retry is ESM only: bundled, so `require('chargeonce/client')` needs no require(esm).
    noExternal: ['p-retry', 'is-network-error'],
  },
]);
