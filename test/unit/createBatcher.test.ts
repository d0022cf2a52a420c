import { describe, expect, it, vi } from 'vitest';
import {
  createBatcher,
  createSharedLoad,
  type BatchRunner,
  type SharedLoad,
} from '../../src/store/createBatcher.js';

// The batching rule, without a database: what goes out alone, what goes out together, and how
// a failed batch is answered. (The statements themselves are tested against PostgreSQL.)

type Sent = { kind: 'one'; inputs: string[] } | { kind: 'many'; inputs: string[] };

function recorder(overrides: Partial<BatchRunner<string, string>> = {}) {
  const sent: Sent[] = [];
  const gates: (() => void)[] = [];
  const held = () => new Promise<void>((resolve) => gates.push(resolve));
  const runner: BatchRunner<string, string> = {
    one: async (input) => {
      sent.push({ kind: 'one', inputs: [input] });
      await held();
      if (input.startsWith('bad')) throw new Error(`refused ${input}`);
      return `done ${input}`;
    },
    many: async (inputs) => {
      sent.push({ kind: 'many', inputs });
      await held();
      if (inputs.some((i) => i.startsWith('bad'))) throw new Error('batch refused');
      if (inputs.some((i) => i.startsWith('down'))) throw new Error('down');
      return inputs.map((i) => `done ${i}`);
    },
    identity: (input) => input.replace(/#.*/, ''),
    sharesIdentity: false,
    maxSize: 3,
    maxInFlight: 1,
    failsEveryInput: (error) => error instanceof Error && error.message === 'down',
    ...overrides,
  };
  const releaseAll = async () => {
    while (gates.length > 0) {
      gates.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { send: createBatcher(runner), sent, releaseAll };
}

/** A load past the pool, whatever the calls. */
const HEAVY: SharedLoad = { enter: () => {}, leave: () => {}, light: () => false };

describe('group commit batching', () => {
  it('sends a lone call at once and alone', async () => {
    const { send, sent, releaseAll } = recorder();
    const answer = send('a');
    expect(sent).toEqual([{ kind: 'one', inputs: ['a'] }]);
    await releaseAll();
    await expect(answer).resolves.toBe('done a');
  });

  it('batches what arrives while a batch is in flight, up to maxSize, one key once per batch', async () => {
    const { send, sent, releaseAll } = recorder();
    const answers = [send('a'), send('b'), send('c'), send('c#again'), send('d'), send('e')];
    await releaseAll();

    await expect(Promise.all(answers)).resolves.toEqual([
      'done a',
      'done b',
      'done c',
      'done c#again',
      'done d',
      'done e',
    ]);
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'many', inputs: ['b', 'c', 'd'] },
      { kind: 'many', inputs: ['c#again', 'e'] },
    ]);
  });

  it('puts a key in one batch more than once when the statement answers each', async () => {
    const { send, sent, releaseAll } = recorder({ sharesIdentity: true, maxSize: 4 });
    const answers = [send('a'), send('b'), send('c'), send('c#again'), send('d'), send('e')];
    await releaseAll();

    await expect(Promise.all(answers)).resolves.toHaveLength(6);
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'many', inputs: ['b', 'c', 'c#again', 'd'] },
      { kind: 'one', inputs: ['e'] },
    ]);
  });

  it('holds a call whose key is in flight until it is back, though a slot is free', async () => {
    const { send, sent, releaseAll } = recorder({ sharesIdentity: true, maxInFlight: 3 });
    const answers = [send('a'), send('a#again'), send('a#third'), send('b')];
    // 'b' takes a free slot; the two later calls for 'a' would only race the first.
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'one', inputs: ['b'] },
    ]);
    await releaseAll();

    await expect(Promise.all(answers)).resolves.toEqual([
      'done a',
      'done a#again',
      'done a#third',
      'done b',
    ]);
    expect(sent.slice(2)).toEqual([{ kind: 'many', inputs: ['a#again', 'a#third'] }]);
  });

  it('retries a failed batch one input at a time: one bad input fails only itself', async () => {
    const { send, sent, releaseAll } = recorder();
    const first = send('a');
    const answers = [send('b'), send('bad'), send('c')].map((p) =>
      p.catch((e: Error) => e.message),
    );
    await releaseAll();
    await first;

    await expect(Promise.all(answers)).resolves.toEqual(['done b', 'refused bad', 'done c']);
    expect(sent.slice(1)).toEqual([
      { kind: 'many', inputs: ['b', 'bad', 'c'] },
      { kind: 'one', inputs: ['b'] },
      { kind: 'one', inputs: ['bad'] },
      { kind: 'one', inputs: ['c'] },
    ]);
  });

  it('fails every input at once when the failure would only repeat (the store is down)', async () => {
    const { send, sent, releaseAll } = recorder();
    const first = send('a');
    const answers = [send('b'), send('down')].map((p) => p.catch((e: Error) => e.message));
    await releaseAll();
    await first;

    await expect(Promise.all(answers)).resolves.toEqual(['down', 'down']);
    expect(sent).toHaveLength(2);
  });

  it('frees the slot of a lone call that failed: the next call goes out at once', async () => {
    const { send, sent, releaseAll } = recorder();
    const failed = send('bad').catch((e: Error) => e.message);
    await releaseAll();
    await expect(failed).resolves.toBe('refused bad');

    const next = send('a');
    expect(sent).toEqual([
      { kind: 'one', inputs: ['bad'] },
      { kind: 'one', inputs: ['a'] },
    ]);
    await releaseAll();
    await expect(next).resolves.toBe('done a');
  });

  it('sends a call made while the lone one is in flight in the next batch, after it', async () => {
    const { send, sent, releaseAll } = recorder();
    const first = send('a');
    const second = send('b');
    // One slot (maxInFlight 1): 'b' waits for 'a' to come back.
    expect(sent).toEqual([{ kind: 'one', inputs: ['a'] }]);
    await releaseAll();
    await expect(Promise.all([first, second])).resolves.toEqual(['done a', 'done b']);
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'one', inputs: ['b'] },
    ]);
  });

  it('past the pool, gathers the calls of one turn into one batch instead of sending the first alone', async () => {
    const { send, sent, releaseAll } = recorder({ load: HEAVY, maxSize: 8 });
    const answers = ['a', 'b', 'c'].map((input) => send(input));
    // A slot is free, but the load is heavy: nothing goes out in the turn the calls were made.
    expect(sent).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([{ kind: 'many', inputs: ['a', 'b', 'c'] }]);
    await releaseAll();
    await expect(Promise.all(answers)).resolves.toEqual(['done a', 'done b', 'done c']);
  });

  it("sends gathered calls even when a caller's tests fake setImmediate", async () => {
    vi.useFakeTimers({ toFake: ['setImmediate'] });
    try {
      const { send, sent } = recorder({ load: HEAVY, maxSize: 8 });
      void send('a');
      void send('b');
      // Real turns of the event loop (setTimeout is not faked here): the gathered flush ran. Two:
      // a timer may fire before the first turn's immediates, never before the second's.
      await new Promise((resolve) => setTimeout(resolve, 0));
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(sent).toEqual([{ kind: 'many', inputs: ['a', 'b'] }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks a limit given as a function each time a batch could start', async () => {
    let limit = 1;
    const { send, sent, releaseAll } = recorder({ maxInFlight: () => limit });
    const first = send('a');
    send('b').catch(() => {});
    // One slot: 'b' waits for 'a'.
    expect(sent).toEqual([{ kind: 'one', inputs: ['a'] }]);
    limit = 2;
    const third = send('c');
    // The limit is now two: 'c' finds a slot free and goes out, taking 'b' along.
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'many', inputs: ['b', 'c'] },
    ]);
    await releaseAll();
    await expect(Promise.all([first, third])).resolves.toEqual(['done a', 'done c']);
  });

  it('sends calls alone past the slots while the pool has a connection for each, then batches', async () => {
    const { send, sent, releaseAll } = recorder({ load: createSharedLoad().at(() => 3) });
    const answers = ['a', 'b', 'c', 'd', 'e'].map((input) => send(input));
    // One slot: 'a' takes it; 'b' and 'c' still fit the pool of 3; 'd' and 'e' would queue for it.
    expect(sent).toEqual([
      { kind: 'one', inputs: ['a'] },
      { kind: 'one', inputs: ['b'] },
      { kind: 'one', inputs: ['c'] },
    ]);
    await releaseAll();

    await expect(Promise.all(answers)).resolves.toHaveLength(5);
    expect(sent.slice(3)).toEqual([{ kind: 'many', inputs: ['d', 'e'] }]);
  });

  it('counts every call out of the load once answered: alone, batched, retried or failed', async () => {
    let calls = 0;
    let entered = 0;
    const load: SharedLoad = {
      enter: () => {
        calls += 1;
        entered += 1;
      },
      leave: () => {
        calls -= 1;
      },
      light: () => calls <= 2,
    };
    const { send, releaseAll } = recorder({ load });
    const answers = ['a', 'bad', 'b', 'bad#2', 'c', 'down', 'd'].map((input) =>
      send(input).catch((e: Error) => e.message),
    );
    await releaseAll();

    await expect(Promise.all(answers)).resolves.toHaveLength(7);
    expect(entered).toBe(7);
    expect(calls).toBe(0);
  });
});

describe('the load of a pool', () => {
  it('is light while the calls, and their recent average, fit in the pool', () => {
    const load = createSharedLoad().at(() => 4);
    for (let i = 0; i < 4; i += 1) load.enter();
    expect(load.light()).toBe(true);
    load.enter();
    expect(load.light()).toBe(false);
    load.leave();
    expect(load.light()).toBe(true);
  });

  it('stays heavy under a steady load past the pool, though its callers come back one by one', () => {
    const load = createSharedLoad().at(() => 10);
    // 32 callers, answered together by a batch and coming back one after the other, many times.
    for (let wave = 0; wave < 50; wave += 1) {
      for (let i = 0; i < 32; i += 1) load.enter();
      for (let i = 0; i < 32; i += 1) load.leave();
    }
    load.enter();
    expect(load.light()).toBe(false);
    load.leave();
    // Lone calls from then on: the load turns light again within a few dozen of them.
    for (let i = 0; i < 100; i += 1) {
      load.enter();
      load.leave();
    }
    load.enter();
    expect(load.light()).toBe(true);
  });
});

describe('shared load after a burst', () => {
  it('turns light again for a lone caller once the burst has passed, even at a limit of one', () => {
    const load = createSharedLoad().at(() => 1);
    for (let i = 0; i < 32; i++) load.enter();
    for (let i = 0; i < 32; i++) load.leave();
    let lightAt = -1;
    for (let call = 1; call <= 2_000 && lightAt < 0; call++) {
      load.enter();
      if (load.light()) lightAt = call;
      load.leave();
    }
    // The average nears one from above and, held to it exactly, would never reach it.
    expect(lightAt).toBeGreaterThan(0);
    expect(lightAt).toBeLessThan(200);
  });
});
