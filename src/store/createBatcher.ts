/**
 * Batches in flight, counted across the batchers that share one pool: a batch goes out only
 * while one is free, and a batcher that found none is told when one is.
 */
export type SharedSlots = {
  take(): boolean;
  give(): void;
  whenFree(retry: () => void): void;
};

/** `max` slots, shared by whoever is given them. */
export function createSharedSlots(max: number): SharedSlots {
  let used = 0;
  let waiting: Array<() => void> = [];
  return {
    take: () => {
      if (used >= max) return false;
      used += 1;
      return true;
    },
    give: () => {
      used -= 1;
      const retries = waiting;
      waiting = [];
      for (const retry of retries) retry();
    },
    whenFree: (retry) => {
      if (!waiting.includes(retry)) waiting.push(retry);
    },
  };
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
   * The most batches in flight at once. A call made while fewer are in flight goes out at once;
   * PostgreSQL already flushes the WAL of concurrent commits together, so a few batches in
   * flight keep both its group flush and this one busy.
   */
  maxInFlight: number;
  /** Slots shared with other batchers of the pool; when given, they bound it, not `maxInFlight`. */
  slots?: SharedSlots;
  /**
   * True for a failure that sending the inputs one at a time would only repeat (PostgreSQL out of
   * reach): every input of the batch gets it. Any other failure of a batch (one input breaking a
   * constraint, a deadlock) is retried input by input.
   */
  failsEveryInput: (error: unknown) => boolean;
};

/**
 * Group commit without a timer: a call made while fewer than `maxInFlight` batches are in flight
 * goes out at once (so a lone caller waits for nothing); calls made while that many are in flight
 * wait for one to return, then go out together in the next. A call whose identity is in flight
 * waits for it to return (see `identity`). A batch that fails is sent again one input at a time,
 * so one input's error never fails another's.
 */
export function createBatcher<I, O>(runner: BatchRunner<I, O>): (input: I) => Promise<O> {
  let queue: Waiting<I, O>[] = [];
  const slots = runner.slots ?? createSharedSlots(runner.maxInFlight);
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

  const settle = (batch: Waiting<I, O>[], sent: Promise<O[]>): Promise<void> =>
    sent.then(
      (outputs) => batch.forEach((w, i) => w.resolve(outputs[i] as O)),
      async (error: unknown) => {
        if (batch.length === 1 || runner.failsEveryInput(error)) {
          batch.forEach((w) => w.reject(error));
          return;
        }
        await Promise.all(batch.map((w) => runner.one(w.input).then(w.resolve, w.reject)));
      },
    );

  const flush = (): void => {
    if (queue.length === 0) return;
    if (!slots.take()) {
      slots.whenFree(flush);
      return;
    }
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
      slots.give();
      return;
    }
    queue = rest;
    for (const waiting of batch) hold(waiting.id);
    const sent =
      batch.length === 1
        ? runner.one((batch[0] as Waiting<I, O>).input).then((output) => [output])
        : runner.many(batch.map((w) => w.input));
    void settle(batch, sent).finally(() => {
      for (const waiting of batch) letGo(waiting.id);
      slots.give();
      flush();
    });
  };

  return (input) => {
    const id = runner.identity(input);
    // Nothing waiting, the identity not in flight and a slot free: the call goes out alone, at
    // once, as `flush` would send it, but without a batch built around it or a promise of ours
    // around the runner's (a lone caller, at low concurrency, is most calls).
    if (queue.length === 0 && !inFlight.has(id) && slots.take()) {
      hold(id);
      const release = (): void => {
        letGo(id);
        slots.give();
        flush();
      };
      const sent = runner.one(input);
      sent.then(release, release);
      return sent;
    }
    return new Promise<O>((resolve, reject) => {
      queue.push({ input, id, resolve, reject });
      flush();
    });
  };
}
