import { describe, expect, it } from 'vitest';
import {
  createChargeEngine,
  createFakeProvider,
  migrate,
  StoreUnavailableError,
} from '../../src/index.js';
import { aKey, aRequest } from '../support/charges.js';
import { closedPortUrl } from '../support/closedPortUrl.js';

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
