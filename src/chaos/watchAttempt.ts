import type { AttemptRoute, FoundAtProvider } from './createAttemptRouter.js';
import type { WaitEnd } from './OperationSink.js';

/** How an attempt ended, as far as its wait is concerned. */
export type AttemptEnd = 'outcome' | 'inUse' | 'error';

/**
 * What a client learns about its attempt from the shared engine's router: whether a lookup
 * found a charge, refund or capture (to tell an adoption), and whether it waited on the key in progress and was
 * woken by the holder's completion.
 */
export function watchAttempt(engineWaits: boolean): {
  route: Required<Pick<AttemptRoute, 'found' | 'event' | 'notified'>>;
  found(): FoundAtProvider | null;
  wait(end: AttemptEnd): WaitEnd | null;
} {
  let found: FoundAtProvider | null = null;
  // A waiting engine says when a wait starts (it marks the key and sleeps on it).
  let waited = false;
  let notified = false;
  return {
    route: {
      found: (answer) => {
        found = answer;
      },
      event: (event) => {
        if (event.type === 'waiting' && engineWaits) waited = true;
      },
      notified: () => {
        if (waited) notified = true;
      },
    },
    found: () => found,
    wait: (end) => {
      if (!waited) return null;
      if (end === 'outcome') return notified ? 'woken' : 'answered';
      return end === 'inUse' ? 'timedOut' : 'failed';
    },
  };
}
