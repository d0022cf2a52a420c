import { describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  createChargeEngine,
  createEnginePool,
  InvalidConfigurationError,
  migrate,
  StoreUnavailableError,
} from '../../src/index.js';
import { createFakeProvider } from '../../src/testing/index.js';
import { aKey, aRequest, waitFor } from '../support/charges.js';
import { closedPortUrl } from '../support/closedPortUrl.js';
import { createTestDatabase } from '../support/testDatabase.js';
import { startWireProxy, type WireProxy } from '../support/wireProxy.js';

describe('store unavailable', () => {
  it('processCharge reports an unreachable database as StoreUnavailableError', async () => {
    const provider = createFakeProvider();
    const engine = createChargeEngine({ pool: await closedPortUrl(), provider });

    const error = await engine.processCharge(aKey(), aRequest()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(error).toMatchObject({ code: 'store_unavailable', httpStatus: 503 });
    expect(provider.calls.createCharge).toBe(0);
    await engine.close();
  });

  it('migrate reports it the same way', async () => {
    await expect(migrate(await closedPortUrl())).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('createEnginePool reports it the same way, with the refusal as its cause', async () => {
    const error = await createEnginePool(await closedPortUrl()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('createEnginePool refuses a connection string that is not one, with the cause', async () => {
    const error = await createEnginePool('not a url').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect((error as InvalidConfigurationError).cause).toBeInstanceOf(Error);
    expect((error as Error).message).not.toContain('not a url');
  });
});

describe('PostgreSQL comes back', () => {
  it('an engine made while it was down connects on the next call, then close() ends its pool', async () => {
    const db = await createTestDatabase();
    const app = `chargeonce_back_${process.pid}`;
    // The test database's URL, on a port where nothing listens yet.
    const port = new URL(await closedPortUrl()).port;
    const url = new URL(db.url);
    url.hostname = '127.0.0.1';
    url.port = port;
    url.searchParams.set('application_name', app);
    const engine = createChargeEngine({ pool: url.toString(), provider: createFakeProvider() });
    let proxy: WireProxy | undefined;
    const sessions = () =>
      db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        SELECT count(*)::int4 AS n FROM pg_stat_activity WHERE application_name = ${app}`);
    try {
      await expect(engine.status()).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(engine.status()).rejects.toBeInstanceOf(StoreUnavailableError);

      // PostgreSQL is reachable at that address now.
      proxy = await startWireProxy(db.url, { port: Number(port) });

      await expect(engine.status()).resolves.toMatchObject({ abandoned: 0 });
      await expect(engine.processCharge(aKey(), aRequest())).resolves.toMatchObject({
        status: 'succeeded',
        replayed: false,
      });
      expect(await sessions()).toBeGreaterThan(0);

      await engine.close();
      await waitFor(async () => (await sessions()) === 0);
      // Closed for good: no pool is made again behind the caller's back.
      await expect(engine.status()).rejects.toBeInstanceOf(InvalidConfigurationError);
      expect(await sessions()).toBe(0);
    } finally {
      await engine.close();
      await proxy?.close();
      await db.drop();
    }
  });
});
