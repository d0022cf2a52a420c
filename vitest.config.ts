import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL and one migrated template for the run; each file clones its own database,
    // so files run in parallel.
    globalSetup: ['test/support/globalSetup.ts'],
    pool: 'forks',
    // Vitest's default (cores - 1) runs files one by one on 2 cores, yet they mostly wait on
    // PostgreSQL. The cap keeps the pools of all workers well under max_connections (300).
    maxWorkers: Math.max(2, Math.min(availableParallelism(), 8)),
    testTimeout: 60_000,
    // Starting PostgreSQL (a container image pull, or embedded binaries) can be slow.
    hookTimeout: 120_000,
  },
});
