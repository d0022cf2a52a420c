import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { databaseNameOf } from '../../src/store/databaseName.js';

// The database name behind a pool, for the phase spans' db.namespace, read from its settings only.

describe('databaseNameOf', () => {
  it('reads `database`, else the path of `connectionString` (decoded)', async () => {
    const named = new pg.Pool({ database: 'payments', host: '127.0.0.1' });
    const fromUrl = new pg.Pool({ connectionString: 'postgres://u@127.0.0.1:5432/pay%20ments' });
    expect(databaseNameOf(named)).toBe('payments');
    expect(databaseNameOf(fromUrl)).toBe('pay ments');
    await Promise.all([named.end(), fromUrl.end()]);
  });

  it('is null when the settings do not name one, or there is no node-postgres pool', async () => {
    const unnamed = new pg.Pool({ connectionString: 'postgres://u@127.0.0.1:5432' });
    expect(databaseNameOf(unnamed)).toBeNull();
    expect(databaseNameOf(null)).toBeNull();
    await unnamed.end();
  });
});
