import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Starts a chaos worker process with an IPC channel. From the TypeScript sources (tests, `tsx`)
 * the worker is a `.ts` file and needs tsx's loader; from `dist/` it is plain JavaScript. Its
 * output is piped, not inherited, so it cannot mix into the command's own (`--json`) output.
 */
export function forkWorker(): ChildProcess {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSources ? './worker.ts' : './worker.js', import.meta.url);
  return fork(fileURLToPath(entry), [], {
    execArgv: fromSources ? ['--import', 'tsx'] : [],
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
}
