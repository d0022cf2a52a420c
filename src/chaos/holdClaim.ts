import { AsyncResource } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PlannedOperation } from './createChaosPlan.js';
import type { OperationSink } from './OperationSink.js';
import type { ClientSettings } from './runOperation.js';
import { sendDuplicate } from './sendDuplicate.js';
import type { OperationCall } from './sendOperation.js';

/**
 * How long past the longest wait on a key in progress a held claim waits for the retry sent
 * meanwhile to be answered. Only a bound, so that a run ends: the retry is answered in about 100
 * ms (a 409) or when its own wait ends, and one still waiting this late was waiting on the key.
 */
const HOLD_MARGIN_MS = 5_000;

/** The hold of one attempt's claim: its route's `hold`, and the retry it sent. */
export type ClaimHold = {
  /** For the attempt's route: the first time its `reserve` hook runs, the hold itself. */
  hold(): Promise<void> | undefined;
  /** Settles once the retry sent during the hold, if any, was answered and told to the sink. */
  settled(): Promise<void>;
};

/**
 * Holds an attempt's claim uncommitted, as a slow `reserve` hook would (`ChaosOptions.holdRate`),
 * unless another claim of the process is held already (`ChaosEngines.takeHold`), and sends its
 * request again meanwhile, as a second submission, on an engine with a pool of its own
 * (`ChaosEngines.forHeldRetry`: what it waits for is then the key, never a connection). The
 * hook waits `holdMs` (past a lease, sometimes, and past the wait of movements queued on a held
 * refund's charge row), and until that retry is answered, `HOLD_MARGIN_MS` past the longest wait
 * at most: a retry of a key another transaction holds must be answered while it is held (a 409,
 * at once or when its own wait ends), not kept waiting, with one of the pool's connections, for
 * as long as the holder's transaction lasts. The retry's event says which it was (`heldClaim`).
 */
export function holdClaim(
  settings: ClientSettings,
  op: PlannedOperation,
  call: OperationCall,
  sink: OperationSink,
  /** How long the hold lasts at least (a slow hook), whenever the retry is answered. */
  holdMs: number,
): ClaimHold {
  let retry: Promise<void> | null = null;
  let released = false;
  // Sent from the client's context, not the hook's: the hook runs inside the holder's
  // transaction, and the retry is another server's call, with nothing of that transaction.
  const sendAgain = AsyncResource.bind(() =>
    sendDuplicate(settings, op, call, sink, 0, { released: () => released }),
  );
  return {
    hold: () => {
      if (retry) return undefined;
      const release = settings.engines.takeHold();
      if (!release) return undefined;
      retry = sendAgain();
      const bound = settings.engines.longestWaitMs + HOLD_MARGIN_MS;
      const stop = new AbortController();
      const answered = Promise.race([
        retry,
        sleep(bound, undefined, { signal: stop.signal }).catch(() => {}),
      ]);
      return Promise.all([answered, sleep(holdMs)])
        .then(() => undefined)
        .finally(() => {
          released = true;
          stop.abort();
          release();
        });
    },
    settled: async () => {
      await retry;
    },
  };
}
