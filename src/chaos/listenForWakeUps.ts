import pg from 'pg';
import { WAITERS_CHANNEL } from '../store/hotStatements.js';

/** A key whose completion woke its waiters. */
export type WokenKey = { merchantId: string; operation: string; key: string };

/**
 * Listens, on a connection of its own, to the notifications completions send to the waiters of
 * keys in `schema`, and calls `onWake` for each: the harness's own ear on what the engines'
 * listeners hear, so a wait that ended with an outcome can be told woken by a notification from
 * one that found the key done by itself. Counting only: if the connection cannot be made or
 * drops, nothing is heard, and the run goes on.
 */
export async function listenForWakeUps(
  databaseUrl: string,
  schema: string,
  onWake: (woken: WokenKey) => void,
): Promise<{ close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  // Unheard, an error on an idle client would end the process.
  client.on('error', () => undefined);
  client.on('notification', (message) => {
    if (message.channel !== WAITERS_CHANNEL || message.payload === undefined) return;
    // schema, merchant, operation and key, one per line (see `waiterPayload`).
    const [inSchema, merchantId, operation, key] = message.payload.split('\n');
    if (inSchema !== schema || merchantId === undefined || operation === undefined) return;
    if (key === undefined) return;
    onWake({ merchantId, operation, key });
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${WAITERS_CHANNEL}`);
  } catch {
    await client.end().catch(() => undefined);
    return { close: async () => {} };
  }
  return { close: () => client.end().catch(() => undefined) };
}
