import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { BenchProvider } from './createBenchProvider.js';
import { createPgPool } from './createPgPool.js';
import type { Design, DesignConnection } from './Design.js';
import { fingerprintRequest } from './fingerprintRequest.js';
import type { NaiveKeyRow } from './NaiveKeyRow.js';
import { responseBody } from './responseBody.js';

const NEVER_ABORTED = new AbortController().signal;

/**
 * The phased design as the seed articles write it (seed 003, versions 2 and 5): claim with
 * `INSERT … ON CONFLICT DO NOTHING`; a loser loads the key to replay, refuse or answer 409; the
 * winner loads the state, reserves in a transaction (charge row + recovery point), calls the
 * provider with the key, and completes in a second transaction. Each step is its own statement,
 * each transaction explicit, as the seed's `ClaimKey`, `LoadState`, `ReserveAndMark` and
 * `RecordResultAndMark` are: 10 round trips for a fresh charge, 2 for a replay. Here on
 * node-postgres with named prepared statements, its strongest form; same tables and rows as the
 * engine's.
 */
export function createNaiveDesign(
  connection: DesignConnection,
  provider: BenchProvider,
): Promise<Design> {
  const pool = createPgPool(connection);
  const statements = naiveStatements(connection.schema);
  const loadKey = async (merchantId: string, key: string): Promise<NaiveKeyRow> => {
    // The claim committed before this statement began, so the row is visible here.
    const result = await pool.query<NaiveKeyRow>({
      ...statements.loadKey,
      values: [merchantId, key],
    });
    const row = result.rows[0];
    if (!row) throw new Error('naive: a claimed key is gone, which nothing deletes');
    return row;
  };
  const design: Design = {
    name: 'naive',
    end: () => pool.end(),
    async charge(key, request) {
      const { canonical, hash } = fingerprintRequest(request);
      const { merchantId } = request;
      const claim = await pool.query({
        ...statements.claimKey,
        values: [merchantId, key, hash, canonical, randomUUID()],
      });
      if (claim.rowCount !== 1) {
        const rec = await loadKey(merchantId, key);
        if (rec.request_hash !== hash) return { kind: 'reused' };
        if (rec.recovery_point === 'completed') {
          return { kind: 'replayed', chargeId: rec.charge_id };
        }
        return { kind: 'inUse' };
      }
      const state = await loadKey(merchantId, key);
      const chargeId = state.charge_id;
      if (state.recovery_point === 'started') {
        await inTransaction(pool, async (client) => {
          await client.query({
            ...statements.reserveCharge,
            values: [
              merchantId,
              chargeId,
              request.customerId,
              request.amountMinor,
              request.currency,
              request.description ?? null,
              request.metadata === undefined ? null : JSON.stringify(request.metadata),
              key,
            ],
          });
          await client.query({ ...statements.markReserved, values: [merchantId, key] });
        });
      }
      const charge = await provider.createCharge(
        {
          providerKey: key,
          merchantId,
          chargeId,
          customerId: request.customerId,
          amountMinor: request.amountMinor,
          currency: request.currency,
        },
        { signal: NEVER_ABORTED },
      );
      const body = responseBody(chargeId, request, charge);
      await inTransaction(pool, async (client) => {
        await client.query({
          ...statements.recordResult,
          values: [merchantId, chargeId, charge.status, charge.id],
        });
        await client.query({ ...statements.markCompleted, values: [merchantId, key, body] });
      });
      return { kind: 'charged', chargeId };
    },
  };
  return Promise.resolve(design);
}

/** BEGIN, `work`, COMMIT on one client; a failed transaction's connection is not reused. */
async function inTransaction(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<void>,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } catch (error) {
    client.release(true);
    throw error;
  }
  client.release();
}

/** The seed's statements, one per step, for one schema; named, so each is parsed once per connection. */
function naiveStatements(schema: string) {
  const keys = `${pg.escapeIdentifier(schema)}.idempotency_keys`;
  const charges = `${pg.escapeIdentifier(schema)}.charges`;
  const keyIs = `merchant_id = $1 AND operation = 'charge' AND key = $2`;
  return {
    claimKey: {
      name: 'naive_claim_key',
      text: `
        INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request, recovery_point,
          charge_id)
        VALUES ($1, 'charge', $2, $3, $4, 'started', $5::uuid)
        ON CONFLICT (merchant_id, operation, key) DO NOTHING`,
    },
    loadKey: {
      name: 'naive_load_key',
      text: `
        SELECT request_hash, recovery_point, charge_id::text AS charge_id, response_status,
          response_body
        FROM ${keys} WHERE ${keyIs}`,
    },
    reserveCharge: {
      name: 'naive_reserve_charge',
      text: `
        INSERT INTO ${charges} (merchant_id, id, customer_id, amount_minor, currency,
          description, metadata, provider_key, status)
        VALUES ($1, $2::uuid, $3, $4, $5, $6, $7::jsonb, $8, 'reserved')`,
    },
    markReserved: {
      name: 'naive_mark_reserved',
      text: `UPDATE ${keys} SET recovery_point = 'reserved', updated_at = now() WHERE ${keyIs}`,
    },
    recordResult: {
      name: 'naive_record_result',
      text: `
        UPDATE ${charges} SET status = $3, provider_charge_id = $4, updated_at = now()
        WHERE merchant_id = $1 AND id = $2::uuid`,
    },
    markCompleted: {
      name: 'naive_mark_completed',
      text: `
        UPDATE ${keys}
        SET recovery_point = 'completed', response_status = 201, response_body = $3,
          completed_at = now(), updated_at = now()
        WHERE ${keyIs}`,
    },
  };
}
