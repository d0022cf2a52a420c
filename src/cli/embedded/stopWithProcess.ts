/** A live embedded server, as the process's end sees it. */
export type LiveServer = {
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
  /** Kills the server and removes its folder, synchronously: for when nothing can be awaited. */
  abandon(): void;
};

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
/**
 * Signals this soon after the first are the same interrupt: a terminal's Ctrl-C reaches the
 * program once from the terminal and again from each wrapper that relays it (npm, tsx), within
 * milliseconds. Only a signal after this is a person asking a second time.
 */
const SAME_INTERRUPT_MS = 1_000;
const live = new Set<LiveServer>();
let firstSignalAt: number | undefined;

/**
 * Ties a server to the life of this process, so that Ctrl-C, a `kill` or an exit never leaves
 * a cluster running or its folder behind (about 40 MB each time):
 *
 * - On SIGINT, SIGTERM or SIGHUP, when the program has no listener of its own for it, every live
 *   server is stopped and its folder removed, and then the signal is raised again, so the
 *   process ends as it would have ended (exit status 128 + the signal's number).
 * - When the program does listen (as `npm run serve` does, to close its HTTP server first), the
 *   program stops its servers itself; a second signal (not a relay of the first) kills them and
 *   ends the process.
 * - On exit (`process.exit`, an uncaught exception), whatever is still live is killed and its
 *   folder removed, synchronously.
 *
 * The listeners are there only while a server is live. Returns the function that unties it.
 */
export function stopWithProcess(server: LiveServer): () => void {
  if (live.size === 0) listen();
  live.add(server);
  return () => {
    live.delete(server);
    if (live.size === 0) unlisten();
  };
}

function listen(): void {
  firstSignalAt = undefined;
  for (const signal of SIGNALS) process.on(signal, onSignal);
  process.on('exit', abandonAll);
}

function unlisten(): void {
  for (const signal of SIGNALS) process.off(signal, onSignal);
  process.off('exit', abandonAll);
}

function onSignal(signal: NodeJS.Signals): void {
  const now = performance.now();
  if (firstSignalAt !== undefined) {
    if (now - firstSignalAt < SAME_INTERRUPT_MS) return;
    abandonAll();
    raiseAgain(signal);
    return;
  }
  firstSignalAt = now;
  // Someone else listens: the program shuts down its own way, servers included.
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...live].map((server) => server.stop())).then(() => raiseAgain(signal));
}

function abandonAll(): void {
  for (const server of [...live]) server.abandon();
}

/** Ends the process by `signal`, as if nobody had listened (unless the program still does). */
function raiseAgain(signal: NodeJS.Signals): void {
  unlisten();
  process.kill(process.pid, signal);
}
