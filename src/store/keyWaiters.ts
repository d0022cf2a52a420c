import pg from 'pg';
import { WAITERS_CHANNEL } from './hotStatements.js';
import type { PgPoolLike } from './pgPoolLike.js';

/** How a wait ended: woken by the key's completion, or its time ran out first. */
export type WaitResult = 'woken' | 'timedOut';

/** Callers waiting on keys, woken by the NOTIFY a completion sends. */
export type KeyWaiters = {
  /**
   * Listens (connecting the listener on first use); false when it cannot, and the caller polls.
   * Listening before a caller marks a key means no completion after the mark goes unheard.
   */
  listen(): Promise<boolean>;
  /**
   * Marks `payload`'s key as waited on with `mark`, once for all the callers of this engine that
   * wait on it together: a storm of callers on one key costs one mark, not one each.
   */
  markOnce(payload: string, mark: () => Promise<boolean>): Promise<boolean>;
  /**
   * Registers a wait: `woken` resolves when `payload`'s key completes, or after `maxMs`,
   * whichever comes first; `cancel` ends a wait no longer needed (it resolves as timed out).
   */
  wait(payload: string, maxMs: number): { woken: Promise<WaitResult>; cancel(): void };
  /** Ends the listener. */
  end(): Promise<void>;
};

type Notification = { channel: string; payload?: string };
type Listener = {
  connect(): Promise<void>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', listener: (message: Notification) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
};

/**
 * One listening connection per engine, made with the pool's own settings but outside it (it holds
 * its connection for as long as it listens, and must not take one of the pool's). If it cannot
 * connect, or drops, waiters fall back to polling; the next wait tries to listen again.
 */
export function createKeyWaiters(pool: PgPoolLike): KeyWaiters {
  const waiting = new Map<string, Set<() => void>>();
  // A mark stands until its key's completion wakes the waiters (or the mark found it done).
  const marks = new Map<string, Promise<boolean>>();
  let listener: Promise<Listener | null> | null = null;
  let ended = false;

  const wake = (payload: string | undefined) => {
    if (payload !== undefined) marks.delete(payload);
    const woken = payload === undefined ? undefined : waiting.get(payload);
    if (!woken) return;
    waiting.delete(payload as string);
    for (const resolve of woken) resolve();
  };

  const connect = async (): Promise<Listener | null> => {
    const settings = (pool as { options?: pg.ClientConfig }).options;
    if (!settings || ended) return null;
    const client = new pg.Client(settings) as unknown as Listener;
    const drop = () => {
      listener = null;
      void client.end().catch(() => undefined);
      // Nobody hears completions now: every waiter looks for itself at once.
      for (const payload of [...waiting.keys()]) wake(payload);
    };
    client.on('error', drop);
    client.on('end', drop);
    client.on('notification', (message) => {
      if (message.channel === WAITERS_CHANNEL) wake(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${WAITERS_CHANNEL}`);
      return client;
    } catch {
      drop();
      return null;
    }
  };

  return {
    async listen() {
      listener ??= connect();
      const connected = await listener;
      if (!connected) listener = null;
      return connected !== null;
    },
    markOnce(payload, mark) {
      let marked = marks.get(payload);
      if (!marked) {
        marked = mark().then(
          (inProgress) => {
            if (!inProgress) marks.delete(payload);
            return inProgress;
          },
          (error: unknown) => {
            marks.delete(payload);
            throw error;
          },
        );
        marks.set(payload, marked);
      }
      return marked;
    },
    wait(payload, maxMs) {
      let cancel = () => {};
      const woken = new Promise<WaitResult>((resolve) => {
        let set = waiting.get(payload);
        if (!set) waiting.set(payload, (set = new Set()));
        const wake = () => {
          clearTimeout(timer);
          resolve('woken');
        };
        const stop = () => {
          clearTimeout(timer);
          set.delete(wake);
          if (set.size === 0) {
            waiting.delete(payload);
            // Nobody waits any more: the next waiter marks again (the key may have changed hands).
            marks.delete(payload);
          }
          resolve('timedOut');
        };
        const timer = setTimeout(stop, maxMs);
        set.add(wake);
        cancel = stop;
      });
      return { woken, cancel };
    },
    async end() {
      ended = true;
      const connected = await listener?.catch(() => null);
      listener = null;
      await connected?.end().catch(() => undefined);
    },
  };
}
