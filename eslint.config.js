// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.bench/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // An un-awaited promise in a payment path is a bug.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // On Node 20, an object literal that starts with a spread and goes on with more properties
    // gets a fresh hidden class on every call: about 1 µs per property after the spread, and
    // slow reads after. The engine and the store are every charge's path: write the fields out.
    files: ['src/engine/**/*.ts', 'src/store/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement:first-child ~ Property',
          message:
            'Write the fields out: on Node 20 `{ ...x, more }` builds a new hidden class per call.',
        },
      ],
    },
  },
  {
    files: ['eslint.config.js', 'test/fixtures/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
