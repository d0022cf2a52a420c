import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../packageRoot.js';

/**
 * Starts a chaos worker process with an IPC channel. From the TypeScript sources (tests, `tsx`)
 * the worker is a `.ts` file and needs tsx's loader; from the build it is `dist/chaos/worker.js`,
 * an entry of its own (this module is bundled elsewhere, into the ESM or the CommonJS build). Its
 * output is piped, not inherited, so it cannot mix into the command's own (`--json`) output.
 */
export function forkWorker(): ChildProcess {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = fromSources
    ? fileURLToPath(new URL('./worker.ts', import.meta.url))
    : join(packageRoot(), 'dist', 'chaos', 'worker.js');
  return fork(entry, [], {
    execArgv: fromSources ? ['--import', 'tsx'] : [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
}
