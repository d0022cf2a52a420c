/**
 * The calls of the batchers that share one pool, from the moment each is made until it is
 * answered (waiting for a batch or in flight). A batcher reads it through `light`: while the load
 * is light, a call goes out alone, at once; past it, calls are gathered into batches.
 */
export type SharedLoad = {
  enter: () => void;
  leave: () => void;
  /** True while a call should go out alone, at once. */
  light: () => boolean;
};

/** How much of the running average of calls one new call moves: about the last 32 calls. */
const LOAD_WEIGHT = 1 / 32;

/**
 * The load of batchers sharing a pool, read by each through a view of its own (`at`): light while
 * the calls made now, and their running average over the last few dozen calls, are no more than
 * the view's limit. The average is what keeps a steady load batched: answered together, a
 * batch's callers come back one after the other, and the first of them would find the load light
 * and go out alone, one by one, until it was heavy again (measured at 32 callers on 10
 * connections, with the count alone: replays lost about a tenth of their throughput to those
 * singles).
 */
export function createSharedLoad(): { at: (limit: () => number) => SharedLoad } {
  let calls = 0;
  let average = 0;
  const enter = (): void => {
    calls += 1;
    average += (calls - average) * LOAD_WEIGHT;
  };
  const leave = (): void => {
    calls -= 1;
  };
  return {
    at: (limit) => ({
      enter,
      leave,
      // The average nears a steady count from above without ever reaching it (it would stay a
      // hair over one for good after a burst, and every lone call would wait its turn): within
      // half a call of the limit counts.
      light: () => {
        const most = limit();
        return calls <= most && average < most + 0.5;
      },
    }),
  };
}

/**
 * The real `setImmediate`, taken when this module loads: a test of the caller's that fakes timers
 * (vitest's and Jest's fake `setImmediate` by default) must not leave gathered calls unsent.
 */
const nextTurn = setImmediate;

/** The real `setTimeout`, for the same reason (see `stalledAfterMs`). */
const laterTimer = setTimeout;

/** A slot taken by a batch or a lone call: `counted` until given back or counted free as stalled. */
type Slot = { takenAt: number; counted: boolean };

/** Batches gathered in this turn of the event loop, by every batcher, and not yet sent. */
let gatheringNow = 0;

/**
 * How many batchers are gathering a batch that goes out at the end of this turn of the event
 * loop: work that can wait (telemetry) waits for them, so as not to hold the batch back.
 */
export function batchesGathering(): number {
  return gatheringNow;
}

/** One call waiting for its batch, with its identity. */
type Waiting<I, O> = {
  input: I;
  id: string;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
};

/**
 * How a batcher sends: one input alone, or several at once (one result per input, in order).
 * Both fail by rejecting, never by throwing (async functions do so).
 */
export type BatchRunner<I, O> = {
  one: (input: I) => Promise<O>;
  many: (inputs: I[]) => Promise<O[]>;
  /**
   * An input's identity (its key). An input whose identity is in flight, alone or in a batch,
   * waits until that is back: sent beside it, it would only wait inside PostgreSQL for the other
   * to commit, then find what it wrote.
   */
  identity: (input: I) => string;
  /**
   * Whether inputs with the same identity may share a batch (its statement answers each of them,
   * as if they had come one after the other); when false, the later one waits for the next.
   */
  sharesIdentity: boolean;
  /** The most inputs in one batch. */
  maxSize: number;
  /**
   * The most batches in flight at once. Without a `load`, a call made while fewer are in flight
   * goes out at once; with one, see `load`. A function is asked each time a batch could start:
   * the limit may follow the load (see `createGroupCommit`).
   */
  maxInFlight: number | (() => number);
  /**
   * The load of the pool's batchers: while it is light, a call whose identity is not in flight
   * goes out alone, at once, even with every slot taken (see `SharedLoad`); while it is heavy, a
   * call never goes out alone at once but joins the batch of its turn of the event loop (see
   * `gather`). Without it, a free slot sends a call alone, at once.
   */
  load?: SharedLoad;
  /**
   * True for a failure that sending the inputs one at a time would only repeat (PostgreSQL out of
   * reach): every input of the batch gets it. Any other failure of a batch (one input breaking a
   * constraint, a deadlock) is retried input by input.
   */
  failsEveryInput: (error: unknown) => boolean;
  /**
   * How long a batch (or a call sent alone on a slot) may hold its slot while calls wait for
   * one: past it, the slot is counted free and the waiting calls go out, while the stalled
   * statement finishes when it does. A statement waiting on a lock another transaction holds
   * (another process's claim inside its `reserve` hook) must not hold up the engine's other
   * calls until that transaction ends. Without it, a slot is held until its statement returns.
   */
  stalledAfterMs?: number;
};

/**
 * Group commit without a timer: a call made while the pool's `load` is light goes out at once (so
 * a lone caller waits for nothing), and so does one made while fewer than `maxInFlight` batches
 * are in flight when there is no `load`. Past the pool, calls wait for the end of their turn of
 * the event loop and go out together, or, with every slot taken, for a batch to return and go out
 * together in the next. A call whose identity is in flight waits for it to return (see
 * `identity`). A batch that fails is sent again one input at a time, so one input's error never
 * fails another's. (The one timer there is only counts a stalled statement's slot free, while
 * calls wait for one: see `stalledAfterMs`. Nothing waits on a timer to be sent.)
 */
export function createBatcher<I, O>(runner: BatchRunner<I, O>): (input: I) => Promise<O> {
  let queue: Waiting<I, O>[] = [];
  /** Batches in flight (a call sent alone on a free slot counts as one). */
  let batches = 0;
  const { maxInFlight } = runner;
  const limit = typeof maxInFlight === 'number' ? () => maxInFlight : maxInFlight;
  /** The slots taken and not yet given back, each with when it was taken. */
  const held = new Set<Slot>();
  const slots = {
    take: (): Slot | null => {
      if (batches >= limit()) {
        watchForStalls();
        return null;
      }
      batches += 1;
      const slot = { takenAt: performance.now(), counted: true };
      held.add(slot);
      return slot;
    },
    // Every return of a slot is followed by a flush, which sends what waited for it. A slot
    // already counted free as stalled is not counted again.
    give: (slot: Slot): void => {
      held.delete(slot);
      if (slot.counted) {
        slot.counted = false;
        batches -= 1;
      }
    },
  };

  // One timer, and only while calls wait for a slot: when the oldest slot has been held
  // `stalledAfterMs`, it is counted free (its statement still runs) and what waits goes out.
  let stallTimer: ReturnType<typeof setTimeout> | null = null;
  const watchForStalls = (): void => {
    const stalledAfterMs = runner.stalledAfterMs;
    if (stalledAfterMs === undefined || stallTimer !== null || queue.length === 0) return;
    let oldest = Infinity;
    for (const slot of held) if (slot.counted) oldest = Math.min(oldest, slot.takenAt);
    if (oldest === Infinity) return;
    const inMs = Math.max(1, Math.ceil(oldest + stalledAfterMs - performance.now()));
    stallTimer = laterTimer(() => {
      stallTimer = null;
      const now = performance.now();
      for (const slot of held) {
        if (slot.counted && now - slot.takenAt >= stalledAfterMs) {
          slot.counted = false;
          batches -= 1;
        }
      }
      flush();
      watchForStalls();
    }, inMs);
    stallTimer.unref();
  };
  /** Identities in flight, and how many inputs of each. */
  const inFlight = new Map<string, number>();
  const hold = (id: string): void => {
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
  };
  const letGo = (id: string): void => {
    const left = (inFlight.get(id) ?? 1) - 1;
    if (left === 0) inFlight.delete(id);
    else inFlight.set(id, left);
  };

  /** A batch is done with: its identities and its slot go back, and what waited goes out. */
  const finish = (batch: Waiting<I, O>[], slot: Slot): void => {
    for (const waiting of batch) letGo(waiting.id);
    slots.give(slot);
    flush();
  };

  const settle = (batch: Waiting<I, O>[], sent: Promise<O[]>, slot: Slot): void => {
    sent.then(
      (outputs) => {
        batch.forEach((w, i) => w.resolve(outputs[i] as O));
        finish(batch, slot);
      },
      (error: unknown) => {
        if (batch.length === 1 || runner.failsEveryInput(error)) {
          batch.forEach((w) => w.reject(error));
          finish(batch, slot);
          return;
        }
        // Each input goes again alone, and the batch's slot goes back now: one of them may wait
        // long (a key another transaction holds), and the calls made meanwhile must not wait
        // with it. Each keeps its identity until its own answer.
        for (const waiting of batch) {
          const alone = (): void => {
            letGo(waiting.id);
            flush();
          };
          runner.one(waiting.input).then(waiting.resolve, waiting.reject).then(alone, alone);
        }
        slots.give(slot);
        flush();
      },
    );
  };

  /** Sends batches while calls wait and slots are free (more than one only past `maxSize`). */
  const flush = (): void => {
    while (flushOne());
  };

  /** Sends one batch of what waits, if a slot is free; false when it sent nothing. */
  const flushOne = (): boolean => {
    if (queue.length === 0) return false;
    const slot = slots.take();
    if (!slot) return false;
    const batch: Waiting<I, O>[] = [];
    const rest: Waiting<I, O>[] = [];
    const taken = runner.sharesIdentity ? null : new Set<string>();
    for (const waiting of queue) {
      const { id } = waiting;
      if (batch.length < runner.maxSize && !inFlight.has(id) && !taken?.has(id)) {
        taken?.add(id);
        batch.push(waiting);
      } else {
        rest.push(waiting);
      }
    }
    // Only calls whose identity is in flight: the slot goes back, and their return flushes again.
    if (batch.length === 0) {
      slots.give(slot);
      return false;
    }
    queue = rest;
    for (const waiting of batch) hold(waiting.id);
    const sent =
      batch.length === 1
        ? runner.one((batch[0] as Waiting<I, O>).input).then((output) => [output])
        : runner.many(batch.map((w) => w.input));
    settle(batch, sent, slot);
    return true;
  };

  // Past the pool (the load heavy), a call that finds nothing in flight to wait for does not go out
  // alone: the callers a batch answered come back one after the other, in the same turn of the
  // event loop, and the first of them, sent alone, would hold the slot while the rest queued
  // behind it, a round trip and a commit for one key on every cycle (measured at 32 callers:
  // half the statements were such singles). It waits for the rest of that turn instead, and the
  // flush then sends it with all that came in it. No timer: what is gathered is what is already
  // on its way, and while the load is light nothing waits at all. (The load is a running average,
  // so after a burst of 32 calls a lone caller's next hundred or so calls still wait their turn.)
  let gathering = false;
  const gather = (): void => {
    if (gathering) return;
    gathering = true;
    gatheringNow += 1;
    nextTurn(() => {
      gathering = false;
      gatheringNow -= 1;
      flush();
    });
  };

  const load = runner.load;
  return (input) => {
    const id = runner.identity(input);
    load?.enter();
    const heavy = load !== undefined && !load.light();
    // Nothing waiting, the identity not in flight, and the pool's load light (or, without a load,
    // a slot free): the call goes out alone, at once, as `flush` would send it, but without a
    // batch built around it or a promise of ours around the runner's (a lone caller, at low
    // concurrency, is most calls).
    if (!heavy && queue.length === 0 && !inFlight.has(id)) {
      const slotted = slots.take();
      if (slotted || load) {
        hold(id);
        const release = (): void => {
          load?.leave();
          letGo(id);
          if (slotted) slots.give(slotted);
          flush();
        };
        const sent = runner.one(input);
        sent.then(release, release);
        return sent;
      }
    }
    return new Promise<O>((resolve, reject) => {
      queue.push(
        load ? leavingOnAnswer(input, id, load, resolve, reject) : { input, id, resolve, reject },
      );
      if (heavy) gather();
      else flush();
    });
  };
}

/** A waiting call whose answers each take it out of `load` first. */
function leavingOnAnswer<I, O>(
  input: I,
  id: string,
  load: SharedLoad,
  resolve: (output: O) => void,
  reject: (error: unknown) => void,
): Waiting<I, O> {
  return {
    input,
    id,
    resolve: (output) => {
      load.leave();
      resolve(output);
    },
    reject: (error) => {
      load.leave();
      reject(error);
    },
  };
}
