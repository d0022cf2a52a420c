import type { ChildProcess } from 'node:child_process';
import {
  addGroupCommitCounts,
  emptyGroupCommitCounts,
  type GroupCommitCounts,
} from './countGroupCommit.js';
import { forkWorker } from './forkWorker.js';
import type { KnownCharge, OperationSink } from './OperationSink.js';
import type { FromWorker, ToWorker, WorkerPlan } from './workerProtocol.js';

/** Options of {@link runWorkerFleet}. */
export type FleetOptions = {
  workers: number;
  /** After each operation settles, the chance that a random busy worker is killed soon after. */
  killRate: number;
  random: () => number;
  /** The plan every worker gets, but for its slot, generation, operations and known charges. */
  plan: Omit<WorkerPlan, 'slot' | 'generation' | 'operations' | 'known'>;
  operations: readonly number[];
  /**
   * The family (the charge's index) of an operation: a family runs on one worker, so that its
   * refunds and captures follow its charge there.
   */
  familyOf: (op: number) => number;
  /** A charge's outcome, once known: a restarted worker's movements of it need its id. */
  known: (op: number) => KnownCharge | undefined;
  sink: OperationSink;
  /** Called after each kill. */
  onKill?: () => void;
};

/** What the fleet went through, and how its claims and completions went on the wire. */
export type FleetResult = {
  processesKilled: number;
  processesStarted: number;
  groupCommit: GroupCommitCounts;
};

/** A kill lands this long after the settle that drew it, at most: a random moment, not a boundary. */
const KILL_DELAY_MS = 250;
/** A worker that does not leave this long after `close` is killed (not counted as chaos). */
const CLOSE_GRACE_MS = 10_000;
/** Deaths the harness did not cause that it tolerates (restarting each) before giving up. */
const MAX_UNEXPECTED_EXITS = 3;
/** How much of a worker's output to keep for the error message if it dies on its own. */
const OUTPUT_TAIL = 4_000;

type Slot = {
  slot: number;
  generation: number;
  /** Operations the worker was given and has not reported ended: a restart gets these. */
  pending: Set<number>;
  child: ChildProcess | null;
  ready: boolean;
  killedByUs: boolean;
  output: string;
};

/**
 * Runs the operations over `workers` child processes (split round-robin by family: a charge and
 * its refunds and captures) and kills them at random
 * moments: after each settled operation, with `killRate`, a random worker that is running charges
 * is `SIGKILL`ed up to 250 ms later, mid-anything. A killed worker is restarted with the
 * operations it had not reported ended; their clients retry with the same keys, as a load
 * balancer's retry after a dead instance would. Resolves once every operation ended.
 *
 * @throws {Error} a worker could not start, or died on its own more than a few times.
 */
export function runWorkerFleet(options: FleetOptions): Promise<FleetResult> {
  return new Promise((resolve, reject) => {
    const slots: Slot[] = Array.from({ length: options.workers }, (_, slot) => ({
      slot,
      generation: 0,
      pending: new Set(
        options.operations.filter((op) => options.familyOf(op) % options.workers === slot),
      ),
      child: null,
      ready: false,
      killedByUs: false,
      output: '',
    }));
    const timers = new Set<NodeJS.Timeout>();
    let processesKilled = 0;
    let processesStarted = 0;
    let unexpectedExits = 0;
    let finished = false;
    // The last counts each worker process sent: its running totals.
    const groupCommit = new Map<ChildProcess, GroupCommitCounts>();

    const later = (ms: number, action: () => void) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        action();
      }, ms);
      timers.add(timer);
    };
    const finish = (error?: Error) => {
      if (finished) return;
      finished = true;
      for (const timer of timers) clearTimeout(timer);
      if (error) {
        for (const s of slots) s.child?.kill('SIGKILL');
        reject(error);
      } else {
        const total = emptyGroupCommitCounts();
        for (const counts of groupCommit.values()) addGroupCommitCounts(total, counts);
        resolve({ processesKilled, processesStarted, groupCommit: total });
      }
    };
    const checkDone = () => {
      if (slots.every((s) => s.child === null && s.pending.size === 0)) finish();
    };

    /** The charges of `pending`'s movements that settled already (in a worker now gone). */
    const knownFor = (pending: ReadonlySet<number>): Array<[number, KnownCharge]> => {
      const known: Array<[number, KnownCharge]> = [];
      for (const op of pending) {
        const family = options.familyOf(op);
        const charge = family === op || pending.has(family) ? undefined : options.known(family);
        if (charge) known.push([family, charge]);
      }
      return known;
    };

    const start = (s: Slot) => {
      if (s.pending.size === 0) return checkDone();
      const child = forkWorker();
      processesStarted += 1;
      Object.assign(s, { child, ready: false, killedByUs: false, output: '' });
      const keep = (chunk: Buffer) => {
        s.output = (s.output + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.on('message', (message: FromWorker) => onMessage(s, child, message));
      child.on('error', (error) => finish(new Error(`chaos worker ${s.slot}: ${error.message}`)));
      // `close`, not `exit`: by then every message the worker sent has been handled.
      child.once('close', (code, signal) => onClose(s, code, signal));
      const message: ToWorker = {
        type: 'start',
        plan: {
          ...options.plan,
          slot: s.slot,
          generation: s.generation++,
          operations: [...s.pending],
          known: knownFor(s.pending),
        },
      };
      child.send(message);
    };

    const onMessage = (s: Slot, child: ChildProcess, message: FromWorker) => {
      switch (message.type) {
        case 'ready':
          s.ready = true;
          return;
        case 'attempt':
          options.sink.attempt(message.event);
          return;
        case 'ended':
          // A late message from a worker already replaced must not count an operation twice.
          if (!s.pending.delete(message.end.op)) return;
          options.sink.ended(message.end);
          if (message.end.result === 'settled' && options.random() < options.killRate) {
            later(options.random() * KILL_DELAY_MS, killOne);
          }
          return;
        case 'groupCommit':
          groupCommit.set(child, message.counts);
          return;
        case 'idle':
          if (child.connected) child.send({ type: 'close' } satisfies ToWorker);
          later(CLOSE_GRACE_MS, () => {
            if (s.child === child) child.kill('SIGKILL');
          });
          return;
        case 'error':
          return finish(new Error(`chaos worker ${s.slot} failed: ${message.message}`));
      }
    };

    const killOne = () => {
      const busy = slots.filter((s) => s.child && s.ready && !s.killedByUs && s.pending.size > 0);
      const victim = busy[Math.floor(options.random() * busy.length)];
      if (!victim?.child) return;
      victim.killedByUs = true;
      victim.child.kill('SIGKILL');
      processesKilled += 1;
      options.onKill?.();
    };

    const onClose = (s: Slot, code: number | null, signal: NodeJS.Signals | null) => {
      const wasReady = s.ready;
      s.child = null;
      if (finished) return;
      if (s.pending.size === 0) return checkDone();
      if (!s.killedByUs) {
        unexpectedExits += 1;
        // Dying before it ever ran a charge is a setup problem (a bad provider module, say):
        // restarting would only repeat it.
        if (!wasReady || unexpectedExits > MAX_UNEXPECTED_EXITS) {
          return finish(
            new Error(
              `chaos worker ${s.slot} exited (${signal ?? `code ${String(code)}`}) on its own${
                s.output ? `:\n${s.output.trim()}` : ''
              }`,
            ),
          );
        }
      }
      start(s);
    };

    slots.forEach(start);
  });
}
