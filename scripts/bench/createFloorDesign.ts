import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { answerExistingKey, type FloorClaimRow } from './answerExistingKey.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createPgPool } from './createPgPool.js';
import type { Design, DesignConnection } from './Design.js';
import { fingerprintRequest } from './fingerprintRequest.js';
import { responseBody } from './responseBody.js';

/** The floor answers provider calls with no deadline of its own: it is a floor. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The least database work any correct design must do, with the fastest client the platform has:
 * node-postgres, named prepared statements (parsed once per connection, and planned once when
 * PostgreSQL settles on a generic plan, as it does for these after five runs), on a plain
 * `pg.Pool` of the engine's size. One statement claims the key and writes the charge intent
 * (committed before money moves), the provider call, one statement records the result on both
 * rows (committed after). A replay is the first statement alone. It writes what the engine
 * writes — key row with request hash and canonical request, charge intent row, then the
 * completion of both — and nothing more: no request validation, no provider deadline, no schema
 * check of rows. Resuming an abandoned key is not part of any scenario, so it is not written here.
 */
export function createFloorDesign(
  connection: DesignConnection,
  provider: BenchProvider,
): Promise<Design> {
  const pool = createPgPool(connection);
  const statements = floorStatements(connection.schema);
  const design: Design = {
    name: 'floor',
    end: () => pool.end(),
    async charge(key, request) {
      const { canonical, hash } = fingerprintRequest(request);
      const chargeId = randomUUID();
      const lockToken = randomUUID();
      const providerKey = `fl_${chargeId}`;
      const claimed = await pool.query<FloorClaimRow>({
        ...statements.claim,
        values: [
          request.merchantId,
          key,
          hash,
          canonical,
          chargeId,
          lockToken,
          request.customerId,
          request.amountMinor,
          request.currency,
          request.description ?? null,
          request.metadata === undefined ? null : JSON.stringify(request.metadata),
          providerKey,
        ],
      });
      let row = claimed.rows[0];
      if (row && !row.claimed && row.request_hash === null) {
        // The winner committed after this statement's snapshot: read it again, as any
        // single-statement claim must.
        const read = await pool.query<FloorClaimRow>({
          ...statements.readKey,
          values: [request.merchantId, key],
        });
        row = read.rows[0];
      }
      if (!row)
        throw new Error('floor: a key that refused the claim is gone, which nothing deletes');
      if (!row.claimed) return answerExistingKey(row, hash);
      const charge = await provider.createCharge(
        {
          providerKey,
          merchantId: request.merchantId,
          chargeId,
          customerId: request.customerId,
          amountMinor: request.amountMinor,
          currency: request.currency,
        },
        { signal: NEVER_ABORTED },
      );
      const completed = await pool.query<{ completed: boolean }>({
        ...statements.complete,
        values: [
          request.merchantId,
          key,
          lockToken,
          responseBody(chargeId, request, charge),
          charge.status,
          charge.id,
          chargeId,
        ],
      });
      if (completed.rows[0]?.completed !== true) {
        throw new Error('floor: lease lost, which no scenario provokes');
      }
      return { kind: 'charged', chargeId };
    },
  };
  return Promise.resolve(design);
}

/**
 * The floor's statements for one schema. A name is per connection: node-postgres sends the text
 * (Parse) the first time a connection runs it, and after that only Bind and Execute.
 */
function floorStatements(schema: string) {
  const keys = `${pg.escapeIdentifier(schema)}.idempotency_keys`;
  const charges = `${pg.escapeIdentifier(schema)}.charges`;
  // The existing row is read only when the insert did nothing (a one-time filter), so a fresh
  // claim pays for no extra index probe. The lease is the engine's default, 30 s.
  const claim = `
    WITH claimed AS (
      INSERT INTO ${keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until)
      VALUES ($1, 'charge', $2, $3, $4, 'reserved', $5::uuid, $6::uuid,
        now() + interval '30 seconds')
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING charge_id
    ), intent AS (
      INSERT INTO ${charges} (merchant_id, id, customer_id, amount_minor, currency,
        description, metadata, provider_key, status)
      SELECT $1, charge_id, $7, $8, $9, $10, $11::jsonb, $12, 'reserved'
      FROM claimed
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM intent) AS claimed, k.request_hash, k.recovery_point,
      k.charge_id::text AS charge_id, k.locked_until > now() AS lease_held, k.response_status,
      k.response_body
    FROM (SELECT 1) AS one
    LEFT JOIN ${keys} k
      ON NOT EXISTS (SELECT 1 FROM claimed)
      AND k.merchant_id = $1 AND k.operation = 'charge' AND k.key = $2`;
  const readKey = `
    SELECT false AS claimed, request_hash, recovery_point, charge_id::text AS charge_id,
      locked_until > now() AS lease_held, response_status, response_body
    FROM ${keys}
    WHERE merchant_id = $1 AND operation = 'charge' AND key = $2`;
  const complete = `
    WITH done AS (
      UPDATE ${keys}
      SET recovery_point = 'completed', response_status = 201, response_body = $4,
        lock_token = NULL, locked_until = NULL, completed_at = now(), updated_at = now()
      WHERE merchant_id = $1 AND operation = 'charge' AND key = $2 AND lock_token = $3::uuid
      RETURNING 1
    ), charged AS (
      UPDATE ${charges}
      SET status = $5, provider_charge_id = $6, updated_at = now()
      WHERE merchant_id = $1 AND id = $7::uuid AND EXISTS (SELECT 1 FROM done)
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM done) AS completed`;
  return {
    claim: { name: 'floor_claim', text: claim },
    readKey: { name: 'floor_read_key', text: readKey },
    complete: { name: 'floor_complete', text: complete },
  };
}
