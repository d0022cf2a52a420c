import { spawn, type ChildProcess } from 'node:child_process';

/** What a finished command left behind. */
export type RunResult = { code: number | null; stdout: string; stderr: string };

export type RunOptions = { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number };

/**
 * Runs a command to its end and returns its exit code and output; never rejects on a non-zero
 * exit, so a test can assert on the output it printed.
 */
export function run(command: string, args: string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 300_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs a command and rejects, with its output, unless it exits 0. */
export async function runOk(
  command: string,
  args: string[],
  options: RunOptions,
): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited ${result.code}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/** A long-running process started by {@link startProcess}. */
export type StartedProcess = {
  child: ChildProcess;
  /** Everything it printed so far, both streams. */
  output(): string;
  /** Sends SIGTERM and waits for it to exit; resolves to its exit code. */
  stop(): Promise<number | null>;
};

/**
 * Starts a process and waits until a line of its stdout matches `ready`; resolves with the
 * match. Rejects with its output if it exits first, or after `timeoutMs`.
 */
export function startProcess(
  command: string,
  args: string[],
  options: RunOptions & { ready: RegExp },
): Promise<{ started: StartedProcess; match: RegExpMatchArray }> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const started: StartedProcess = {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} printed no ready line in time:\n${output}`));
    }, options.timeoutMs ?? 60_000);
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      stdout += chunk;
      const match = options.ready.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve({ started, match });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited ${code} before it was ready:\n${output}`));
    });
  });
}
