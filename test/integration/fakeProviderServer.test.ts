import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createHttpProvider,
  ProviderHttpError,
  startFakeProviderServer,
  type FakeProviderServer,
  type FakeProviderServerOptions,
  type FakeServerFault,
} from '../../src/testing/index.js';
import {
  InvalidConfigurationError,
  ProviderTransientError,
  type CreateChargeInput,
  type PaymentProvider,
} from '../../src/index.js';
import { seededRandom } from '../../src/provider/seededRandom.js';
import { waitFor } from '../support/charges.js';

const servers: FakeProviderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(
  options: FakeProviderServerOptions = {},
): Promise<{ server: FakeProviderServer; provider: PaymentProvider }> {
  const server = await startFakeProviderServer(options);
  servers.push(server);
  return { server, provider: createHttpProvider({ baseUrl: server.url }) };
}

let counter = 0;
function aCharge(overrides: Partial<CreateChargeInput> = {}): CreateChargeInput {
  counter += 1;
  return {
    providerKey: `co_test_${counter}_${Math.random().toString(36).slice(2)}`,
    merchantId: 'm_fake_server',
    chargeId: randomUUID(),
    customerId: 'c_42',
    amountMinor: 2000,
    currency: 'NGN',
    ...overrides,
  };
}

/** A signal that never aborts: the server alone decides how the call ends. */
const forever = () => ({ signal: new AbortController().signal });

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

async function transientReason(promise: Promise<unknown>): Promise<string> {
  const error = await failure(promise);
  expect(error).toBeInstanceOf(ProviderTransientError);
  return (error as ProviderTransientError).reason;
}

describe('every fault, seen through the HTTP adapter', () => {
  it('errorBeforeCharge: a transient http_5xx, nothing charged', async () => {
    const { server, provider } = await start();
    server.failNext('errorBeforeCharge');

    const error = await failure(provider.createCharge(aCharge(), forever()));

    expect(error).toBeInstanceOf(ProviderTransientError);
    expect((error as ProviderTransientError).reason).toBe('http_5xx');
    const cause = (error as ProviderTransientError).cause;
    expect(cause).toBeInstanceOf(ProviderHttpError);
    expect([500, 502, 503]).toContain((cause as ProviderHttpError).status);
    expect(server.ledger()).toEqual([]);
    expect(server.stats().faults.errorBeforeCharge).toBe(1);
  });

  it('errorAfterCharge: a transient http_5xx, yet the charge is in the ledger', async () => {
    const { server, provider } = await start();
    const input = aCharge();
    server.failNext('errorAfterCharge');

    expect(await transientReason(provider.createCharge(input, forever()))).toBe('http_5xx');

    expect(server.ledger()).toEqual([
      expect.objectContaining({ providerKey: input.providerKey, status: 'succeeded' }),
    ]);
    // Within the window, the retry gets that same charge and makes no other.
    const retried = await provider.createCharge(input, forever());
    expect(retried.id).toBe(server.ledger()[0]?.id);
    expect(server.ledger()).toHaveLength(1);
  });

  it('resetAfterCharge: a transient reset, yet the charge is in the ledger', async () => {
    const { server, provider } = await start();
    const input = aCharge();
    server.failNext('resetAfterCharge');

    expect(await transientReason(provider.createCharge(input, forever()))).toBe('reset');

    expect(server.ledger()).toEqual([
      expect.objectContaining({ providerKey: input.providerKey, status: 'succeeded' }),
    ]);
    expect(server.stats().faults.resetAfterCharge).toBe(1);
  });

  it('tooManyRequests: a transient http_429 carrying Retry-After, nothing charged', async () => {
    const { server, provider } = await start();
    server.failNext('tooManyRequests');

    const error = await failure(provider.createCharge(aCharge(), forever()));

    expect((error as ProviderTransientError).reason).toBe('http_429');
    const cause = (error as ProviderTransientError).cause as ProviderHttpError;
    expect(cause.status).toBe(429);
    expect(cause.retryAfterMs).toBe(1_000);
    expect(server.ledger()).toEqual([]);
  });

  it('decline: an answer, not an error, recorded and deduped like any charge', async () => {
    const { server, provider } = await start();
    const input = aCharge();
    server.failNext('decline');

    const declined = await provider.createCharge(input, forever());

    expect(declined).toEqual({
      id: expect.stringMatching(/^ch_/) as unknown,
      status: 'declined',
      amountMinor: 2000,
      currency: 'NGN',
      declineCode: 'card_declined',
    });
    // A retry of a declined charge gets the decline again, not a fresh attempt at the card.
    expect(await provider.createCharge(input, forever())).toEqual(declined);
    expect(server.ledger()).toEqual([expect.objectContaining({ id: declined.id })]);
  });

  it('hang: the caller times out (transient timeout), nothing charged', async () => {
    const { server, provider } = await start();
    server.failNext('hang');

    const reason = await transientReason(
      provider.createCharge(aCharge(), { signal: AbortSignal.timeout(100) }),
    );

    expect(reason).toBe('timeout');
    expect(server.ledger()).toEqual([]);
    expect(server.stats().faults.hang).toBe(1);
  });

  it('latency past the caller timeout: a timeout for the caller, a charge at the provider', async () => {
    const { server, provider } = await start({ latencyMs: { min: 150, max: 150 } });
    const input = aCharge();

    const reason = await transientReason(
      provider.createCharge(input, { signal: AbortSignal.timeout(20) }),
    );

    expect(reason).toBe('timeout');
    // A provider finishes what it started, whether or not the caller is still listening.
    await waitFor(() => Promise.resolve(server.ledger().length === 1));
    expect(server.ledger()[0]?.providerKey).toBe(input.providerKey);
  });

  it('lookups get hang, 5xx and 429 too, but never the queued faults', async () => {
    const { server, provider } = await start({ rates: { tooManyRequests: 1 } });
    expect(
      await transientReason(provider.findCharge('co_x', { ...forever(), reservedAt: new Date() })),
    ).toBe('http_429');
    server.setRates({ tooManyRequests: 0, errorBeforeCharge: 1 });
    expect(
      await transientReason(provider.findCharge('co_x', { ...forever(), reservedAt: new Date() })),
    ).toBe('http_5xx');
    server.setRates({ errorBeforeCharge: 0 });

    server.failNext('resetAfterCharge');
    await expect(
      provider.findCharge('co_x', { ...forever(), reservedAt: new Date() }),
    ).resolves.toBeNull();
    expect(await transientReason(provider.createCharge(aCharge(), forever()))).toBe('reset');
  });

  it('with faultLookups: false, lookups answer whatever the rates', async () => {
    const { provider } = await start({ rates: { errorBeforeCharge: 1 }, faultLookups: false });

    await expect(
      provider.findCharge('co_x', { ...forever(), reservedAt: new Date() }),
    ).resolves.toBeNull();
    expect(await transientReason(provider.createCharge(aCharge(), forever()))).toBe('http_5xx');
  });

  it('a provider that is not there: a transient network failure', async () => {
    const { server, provider } = await start();
    await server.close();

    expect(await transientReason(provider.createCharge(aCharge(), forever()))).toBe('network');
    expect(
      await transientReason(provider.findCharge('co_x', { ...forever(), reservedAt: new Date() })),
    ).toBe('network');
  });
});

describe('answers that are bugs, not transient failures', () => {
  it('the same key with a different body: 400 idempotency_error, no second charge', async () => {
    const { server, provider } = await start();
    const input = aCharge();
    await provider.createCharge(input, forever());

    const error = await failure(provider.createCharge({ ...input, amountMinor: 1 }, forever()));

    expect(error).not.toBeInstanceOf(ProviderTransientError);
    expect(error).toBeInstanceOf(ProviderHttpError);
    expect((error as ProviderHttpError).status).toBe(400);
    expect((error as ProviderHttpError).body).toContain('idempotency_error');
    expect(server.ledger()).toHaveLength(1);
  });

  it('a wrong path: a plain error with the 404', async () => {
    const { server } = await start();
    const provider = createHttpProvider({ baseUrl: `${server.url}/not-the-api/` });

    const error = await failure(
      provider.findCharge('co_x', { ...forever(), reservedAt: new Date() }),
    );

    expect(error).not.toBeInstanceOf(ProviderTransientError);
    expect((error as ProviderHttpError).status).toBe(404);
  });

  it.each([
    ['not JSON', 'Internal things went {'],
    ['the wrong shape', JSON.stringify({ id: 'ch_1', status: 'pending' })],
  ])('a 200 whose body is %s: a plain error', async (_, body) => {
    const provider = createHttpProvider({
      baseUrl: 'http://127.0.0.1:9',
      fetch: () => Promise.resolve(new Response(body, { status: 200 })),
    });

    const error = await failure(provider.createCharge(aCharge(), forever()));

    expect(error).toBeInstanceOf(ProviderHttpError);
    expect(error).not.toBeInstanceOf(ProviderTransientError);
  });

  it('sends the configured headers and the provider key as Idempotency-Key', async () => {
    const { server } = await start();
    const seen: Headers[] = [];
    const provider = createHttpProvider({
      baseUrl: server.url,
      headers: { authorization: 'Bearer sk_test' },
      fetch: (url, init) => {
        seen.push(new Headers(init?.headers));
        return fetch(url, init);
      },
    });
    const input = aCharge();

    await provider.createCharge(input, forever());

    expect(seen[0]?.get('authorization')).toBe('Bearer sk_test');
    expect(seen[0]?.get('idempotency-key')).toBe(input.providerKey);
  });

  it('refuses a baseUrl that is not http(s)', () => {
    expect(() => createHttpProvider({ baseUrl: 'ftp://example.com' })).toThrow(
      InvalidConfigurationError,
    );
    expect(() => createHttpProvider({ baseUrl: 'nope' })).toThrow(InvalidConfigurationError);
  });
});

describe('the idempotency window', () => {
  it('within it, the same key gets the same charge', async () => {
    const { server, provider } = await start();
    const input = aCharge();

    const first = await provider.createCharge(input, forever());
    const second = await provider.createCharge(input, forever());

    expect(second).toEqual(first);
    expect(server.ledger()).toHaveLength(1);
    expect(server.stats()).toMatchObject({ charges: 1, replays: 1 });
  });

  it('past it, the same key charges again, and findCharge still finds the first', async () => {
    let now = 1_000_000;
    const { server, provider } = await start({ idempotencyWindowMs: 1_000, now: () => now });
    const input = aCharge();

    const first = await provider.createCharge(input, forever());
    now += 999;
    expect((await provider.createCharge(input, forever())).id).toBe(first.id);
    now += 1;
    const second = await provider.createCharge(input, forever());

    expect(second.id).not.toBe(first.id);
    expect(server.ledger().map((e) => [e.providerKey, e.id])).toEqual([
      [input.providerKey, first.id],
      [input.providerKey, second.id],
    ]);
    expect(server.ledger()[0]?.createdAt).toBe(new Date(1_000_000).toISOString());
    await expect(
      provider.findCharge(input.providerKey, { ...forever(), reservedAt: new Date() }),
    ).resolves.toEqual(first);
  });

  it('a window of 0 forgets at once: every POST charges', async () => {
    const { server, provider } = await start({ idempotencyWindowMs: 0 });
    const input = aCharge();

    const first = await provider.createCharge(input, forever());
    await provider.createCharge(input, forever());

    expect(server.ledger()).toHaveLength(2);
    await expect(
      provider.findCharge(input.providerKey, { ...forever(), reservedAt: new Date() }),
    ).resolves.toEqual(first);
  });

  it('forgetIdempotencyKeys() forgets now; the ledger stays', async () => {
    const { server, provider } = await start();
    const input = aCharge();
    await provider.createCharge(input, forever());

    server.forgetIdempotencyKeys();
    await provider.createCharge(input, forever());

    expect(server.ledger().filter((e) => e.providerKey === input.providerKey)).toHaveLength(2);
  });

  it('findCharge of a key never used is null', async () => {
    const { provider } = await start();
    await expect(
      provider.findCharge('co_never', { ...forever(), reservedAt: new Date() }),
    ).resolves.toBeNull();
  });
});

describe('the seeded PRNG', () => {
  const rates = {
    hang: 0.1,
    errorBeforeCharge: 0.1,
    errorAfterCharge: 0.1,
    resetAfterCharge: 0.1,
    tooManyRequests: 0.1,
    decline: 0.1,
  };

  /** The fault each of `n` sequential POSTs got, read from the server's own counters. */
  async function faultSequence(seed: number, n: number): Promise<string[]> {
    // hangMs 0: a hung request is dropped at once, so the run needs no client timeout.
    const { server, provider } = await start({ seed, rates, hangMs: 0 });
    const sequence: string[] = [];
    for (let i = 0; i < n; i++) {
      const before = server.stats().faults;
      await provider.createCharge(aCharge(), forever()).catch(() => null);
      const after = server.stats().faults;
      const fired = (Object.keys(after) as FakeServerFault[]).filter((f) => after[f] > before[f]);
      sequence.push(fired.join('+') || 'none');
    }
    return sequence;
  }

  it('the same seed gives the same faults, another seed other faults', async () => {
    const a = await faultSequence(42, 40);
    const b = await faultSequence(42, 40);
    const c = await faultSequence(43, 40);

    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    // The run is worth comparing only if it met every fault.
    expect(new Set(a)).toEqual(new Set([...Object.keys(rates), 'none']));
  });

  it('seededRandom repeats itself for a seed and stays in [0, 1)', () => {
    const first = seededRandom(7);
    const second = seededRandom(7);
    const drawn = Array.from({ length: 1_000 }, () => first());
    expect(Array.from({ length: 1_000 }, () => second())).toEqual(drawn);
    expect(drawn.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(new Set(drawn).size).toBeGreaterThan(990);
  });
});

describe('control', () => {
  it('setRates changes the rates at runtime; failNext goes ahead of them', async () => {
    const { provider, server } = await start();
    server.setRates({ decline: 1 });
    server.failNext('errorBeforeCharge');

    expect(await transientReason(provider.createCharge(aCharge(), forever()))).toBe('http_5xx');
    expect((await provider.createCharge(aCharge(), forever())).status).toBe('declined');
    server.setRates({ decline: 0 });
    expect((await provider.createCharge(aCharge(), forever())).status).toBe('succeeded');
  });

  it('refuses rates outside [0, 1], rates over 1 in total, and a bad latency range', async () => {
    await expect(startFakeProviderServer({ rates: { hang: 1.5 } })).rejects.toThrow(
      InvalidConfigurationError,
    );
    await expect(startFakeProviderServer({ rates: { hang: 0.6, decline: 0.6 } })).rejects.toThrow(
      InvalidConfigurationError,
    );
    await expect(startFakeProviderServer({ latencyMs: { min: 10, max: 5 } })).rejects.toThrow(
      InvalidConfigurationError,
    );
    await expect(startFakeProviderServer({ idempotencyWindowMs: -1 })).rejects.toThrow(
      InvalidConfigurationError,
    );
  });

  it('a refused setRates or failNext changes nothing', async () => {
    const { server, provider } = await start({ rates: { decline: 0.5 } });

    expect(() => server.setRates({ errorAfterCharge: 0.6 })).toThrow(InvalidConfigurationError);
    expect(() => server.setRates({ decline: -0.1 })).toThrow(InvalidConfigurationError);
    expect(() => server.failNext('decline', 'explode' as FakeServerFault)).toThrow(
      InvalidConfigurationError,
    );
    server.setRates({ decline: 0 });

    expect((await provider.createCharge(aCharge(), forever())).status).toBe('succeeded');
  });

  it('serves the ledger and the stats over HTTP, as it holds them', async () => {
    const { server, provider } = await start();
    await provider.createCharge(
      aCharge({ description: 'Order 1', metadata: { order: '1' } }),
      forever(),
    );
    server.failNext('resetAfterCharge');
    await provider.createCharge(aCharge(), forever()).catch(() => null);

    const ledger = await (await fetch(`${server.url}/v1/ledger`)).json();
    const stats = await (await fetch(`${server.url}/v1/stats`)).json();

    expect(ledger).toEqual({ ledger: server.ledger() });
    expect(server.ledger()[0]).toMatchObject({
      description: 'Order 1',
      metadata: { order: '1' },
      customerId: 'c_42',
      createdAt: expect.any(String) as unknown,
    });
    expect(stats).toEqual(server.stats());
    expect(server.stats()).toMatchObject({
      seed: server.seed,
      requests: { createCharge: 2, ledger: 1, stats: 1 },
      faults: { resetAfterCharge: 1 },
      charges: 2,
    });
    expect((await fetch(`${server.url}/v1/nothing`)).status).toBe(404);
  });

  it('a POST without an Idempotency-Key is refused', async () => {
    const { server } = await start();

    const response = await fetch(`${server.url}/v1/charges`, {
      method: 'POST',
      body: JSON.stringify({ customerId: 'c', amountMinor: 1, currency: 'NGN' }),
    });

    expect(response.status).toBe(400);
    expect(server.ledger()).toEqual([]);
  });
});

describe('close()', () => {
  it('ends hung and delayed requests at once; the callers see a transient failure', async () => {
    const hung = await startFakeProviderServer();
    const slow = await startFakeProviderServer({ latencyMs: { min: 60_000, max: 60_000 } });
    hung.failNext('hang');
    const hanging = failure(
      createHttpProvider({ baseUrl: hung.url }).createCharge(aCharge(), forever()),
    );
    const waiting = failure(
      createHttpProvider({ baseUrl: slow.url }).createCharge(aCharge(), forever()),
    );
    await waitFor(() => Promise.resolve(hung.stats().faults.hang === 1));
    await waitFor(() => Promise.resolve(slow.stats().requests.createCharge === 1));

    await Promise.all([hung.close(), slow.close()]);

    for (const error of await Promise.all([hanging, waiting])) {
      expect(error).toBeInstanceOf(ProviderTransientError);
      expect(['reset', 'network']).toContain((error as ProviderTransientError).reason);
    }
    expect(slow.ledger()).toEqual([]);
    await expect(hung.close()).resolves.toBeUndefined();
  }, 10_000);
});
