import { chaosHostClock } from './hostSuspend.js';
import { createChargeEngine, type ChargeEngine } from '../engine/createChargeEngine.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import type { PgPoolLike } from '../store/pgPoolLike.js';
import { createAttemptRouter, type AttemptRouter, type KeyRef } from './createAttemptRouter.js';
import { countGroupCommit, type GroupCommitCounts } from './countGroupCommit.js';
import { listenForWakeUps } from './listenForWakeUps.js';

/** What the engines of one chaos process are made with. */
export type ChaosEngineSettings = {
  /** The process's node-postgres pool: every engine shares it (group commit needs one). */
  pool: PgPoolLike;
  /** The same database, for the harness's own listener (see `listenForWakeUps`). */
  databaseUrl: string;
  provider: PaymentProvider;
  schema: string;
  leaseMs: number;
  providerTimeoutMs: number;
  /**
   * What the clients' engines promise: the reaper keeps keys as long as the longest promise
   * recorded, so the clients' is the run's `retentionMs` for reaping to happen within the run.
   */
  retentionMs: number;
  /** How long a waiting engine waits on a key in progress; `0`: no engine waits. */
  waitMs: number;
  /**
   * True: this process's clients wait on keys in progress and its second submissions are
   * rejected at once; false: the other way round.
   */
  clientsWait: boolean;
};

/** An engine shared by the attempts of a process, with the router that tells them apart. */
export type SharedEngine = {
  engine: ChargeEngine;
  router: AttemptRouter;
  /** `inProgress: { waitMs }` (else `'reject'`). */
  waits: boolean;
};

/** The engines of one chaos process (a worker, or the harness itself). */
export type ChaosEngines = {
  /**
   * The engine for a client's attempt: the shared one, or, for an attempt that commits its claim
   * on its own (`separateClaim`, an engine option), the one shared by those attempts; or, for an
   * attempt whose claim is to be held uncommitted (`hold`), the one whose `reserve` hooks wait
   * as the attempt's route says (`AttemptRoute.hold`).
   */
  forAttempt(separateClaim: boolean, hold?: boolean): SharedEngine;
  /** The engine for a second submission of a request: another server, with the other policy. */
  forDuplicate(): SharedEngine;
  /**
   * The engine for the retry of a held claim (see `holdClaim`): another server's, on a pool of
   * its own. Refunds of the charge of a held refund wait on its row, each with one of the
   * process's connections: on the process's pool the retry could wait for a connection, not for
   * the key. Retries wait on keys in progress and refuse them by turns, the first one waiting
   * (when engines wait at all), so that every run with a hold has both.
   */
  forHeldRetry(): SharedEngine;
  /** How long an engine of this process waits on a key in progress, at most (`0`: none waits). */
  longestWaitMs: number;
  /**
   * Takes this process's one hold of a claim (see `holdClaim`): its release, or null while
   * another attempt holds one. A held claim keeps one of the process's connections until its
   * retry is answered: one at a time leaves the others to the process's other clients.
   */
  takeHold(): (() => void) | null;
  /** How this process's claims and completions went on the wire so far. */
  counts(): GroupCommitCounts;
  /** Closes the engines and the listener; the pool stays open (it is the caller's). */
  close(): Promise<void>;
};

/**
 * Creates the engines of one chaos process. Every attempt of the process goes through one of a
 * few engines that live as long as the process, so concurrent attempts batch their claims and
 * completions (group commit, the engines' default on a node-postgres pool) and wait on each
 * other's keys (`inProgress`), as the calls of one server would; the faults each attempt draws
 * reach it through the engine's router, by key. Engines are made when first asked for:
 *
 * - the shared engine, which most attempts use;
 * - one like it whose claims commit on their own (`separateClaim`), for the attempts that draw
 *   it: the option is the engine's, and only such attempts can crash with a key at `started`;
 * - one with the other in-progress policy, for second submissions of a request;
 * - one whose `reserve` hooks (a charge's, a refund's, a capture's) wait while the attempt says
 *   so, holding the claim's transaction open: a slow hook, with the key uncommitted. It runs
 *   no other claims (its own engine: group commit never batches another key with a held one);
 * - one like the second submissions', on a pool of its own, for the retries of held claims.
 */
export async function createChaosEngines(settings: ChaosEngineSettings): Promise<ChaosEngines> {
  const counted = countGroupCommit(settings.pool, settings.schema);
  const made = new Map<string, SharedEngine>();
  const make = (
    separateClaim: boolean,
    waits: boolean,
    role: 'client' | 'hold' | 'retry' = 'client',
  ): SharedEngine => {
    const name = `${separateClaim ? 'separate' : 'joint'}/${waits ? 'wait' : 'reject'}/${role}`;
    let shared = made.get(name);
    if (!shared) {
      const router = createAttemptRouter(settings.provider);
      const reserve = { reserve: (_tx: unknown, scoped: KeyRef) => router.hold(scoped) };
      const engine = createChargeEngine({
        // A connection string: the engine makes a pool of its own, and ends it on close.
        pool: role === 'retry' ? settings.databaseUrl : counted.pool,
        provider: router.provider,
        schema: settings.schema,
        leaseMs: settings.leaseMs,
        providerTimeoutMs: settings.providerTimeoutMs,
        retentionMs: settings.retentionMs,
        separateClaim,
        inProgress: waits ? { waitMs: settings.waitMs } : 'reject',
        faults: router.faults,
        // The host's clock, with the suspends the faults inject hidden from its monotonic part.
        clock: chaosHostClock(),
        onEvent: router.onEvent,
        ...(role === 'hold' ? { hooks: { ...reserve, refund: reserve, capture: reserve } } : {}),
      });
      made.set(name, (shared = { engine, router, waits }));
    }
    return shared;
  };
  let holding = false;
  let heldRetries = 0;
  const clientsWait = settings.waitMs > 0 && settings.clientsWait;
  const duplicatesWait = settings.waitMs > 0 && !settings.clientsWait;
  const listener =
    settings.waitMs > 0
      ? await listenForWakeUps(settings.databaseUrl, settings.schema, (woken) => {
          for (const shared of made.values()) if (shared.waits) shared.router.notified(woken);
        })
      : null;

  return {
    forAttempt: (separateClaim, hold) => make(separateClaim, clientsWait, hold ? 'hold' : 'client'),
    forDuplicate: () => make(false, duplicatesWait),
    forHeldRetry: () => make(false, settings.waitMs > 0 && heldRetries++ % 2 === 0, 'retry'),
    longestWaitMs: settings.waitMs,
    takeHold: () => {
      if (holding) return null;
      holding = true;
      return () => {
        holding = false;
      };
    },
    counts: counted.counts,
    close: async () => {
      await Promise.all([...made.values()].map((shared) => shared.engine.close()));
      await listener?.close();
    },
  };
}
