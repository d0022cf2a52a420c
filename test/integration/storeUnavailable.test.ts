import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createFakeProvider,
  migrate,
  StoreUnavailableError,
} from '../../src/index.js';
import { aKey, aRequest } from '../support/charges.js';

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `postgres://nobody:nothing@127.0.0.1:${port}/none`;
}

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
});
