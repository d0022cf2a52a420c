import { randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import type { ChargeRequest } from '../../src/request.js';
import { tablesIn, type Tables } from '../../src/store/tables.js';
import { answerExistingKey, type FloorClaimRow } from './answerExistingKey.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createSlonikPool } from './createSlonikPool.js';
import type { Design, DesignConnection } from './Design.js';
import { fingerprintRequest } from './fingerprintRequest.js';
import { responseBody } from './responseBody.js';

const LEASE_MS = 30_000;
const OPERATION = 'charge';

/** The floor answers provider calls with no deadline of its own: it is a floor. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The floor's two statements (see createFloorDesign) on slonik: SQL text with bound values,
 * which PostgreSQL parses and plans on every call, and slonik's per-query work in Node. Kept to
 * show what the SQL layer costs on its own, against the node-postgres floor.
 */
export async function createSlonikFloorDesign(
  connection: DesignConnection,
  provider: BenchProvider,
): Promise<Design> {
  const pool = await createSlonikPool(connection.url, connection.poolSize);
  const tables = tablesIn(connection.schema);
  return {
    name: 'floor-slonik',
    end: () => pool.end(),
    async charge(key, request) {
      const { canonical, hash } = fingerprintRequest(request);
      const chargeId = randomUUID();
      const lockToken = randomUUID();
      const providerKey = `fl_${chargeId}`;
      let row = await claim(pool, tables, {
        key,
        request,
        canonical,
        hash,
        chargeId,
        lockToken,
        providerKey,
      });
      if (!row.claimed && row.request_hash === null) {
        // The winner committed after this statement's snapshot: read it again, as any
        // single-statement claim must.
        row = await readKey(pool, tables, request.merchantId, key);
      }
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
      const completed = (await pool.oneFirst(sql.unsafe`
        WITH done AS (
          UPDATE ${tables.keys}
          SET recovery_point = 'completed', response_status = 201,
            response_body = ${responseBody(chargeId, request, charge)},
            lock_token = NULL, locked_until = NULL, completed_at = now(), updated_at = now()
          WHERE merchant_id = ${request.merchantId} AND operation = ${OPERATION}
            AND key = ${key} AND lock_token = ${lockToken}::uuid
          RETURNING 1
        ), charged AS (
          UPDATE ${tables.charges}
          SET status = ${charge.status}, provider_charge_id = ${charge.id}, updated_at = now()
          WHERE merchant_id = ${request.merchantId} AND id = ${chargeId}::uuid
            AND EXISTS (SELECT 1 FROM done)
          RETURNING 1
        )
        SELECT EXISTS (SELECT 1 FROM done) AS completed
      `)) as boolean;
      if (!completed) throw new Error('floor-slonik: lease lost, which no scenario provokes');
      return { kind: 'charged', chargeId };
    },
  };
}

async function claim(
  pool: DatabasePool,
  tables: Tables,
  input: {
    key: string;
    request: ChargeRequest;
    canonical: string;
    hash: string;
    chargeId: string;
    lockToken: string;
    providerKey: string;
  },
): Promise<FloorClaimRow> {
  const { request } = input;
  // The existing row is read only when the insert did nothing (a one-time filter), so a fresh
  // claim pays for no extra index probe.
  return (await pool.one(sql.unsafe`
    WITH claimed AS (
      INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
        recovery_point, charge_id, lock_token, locked_until)
      VALUES (${request.merchantId}, ${OPERATION}, ${input.key}, ${input.hash}, ${input.canonical},
        'reserved', ${input.chargeId}::uuid, ${input.lockToken}::uuid,
        now() + ${LEASE_MS}::float8 * interval '1 millisecond')
      ON CONFLICT (merchant_id, operation, key) DO NOTHING
      RETURNING charge_id
    ), intent AS (
      INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
        description, metadata, provider_key, status)
      SELECT ${request.merchantId}, charge_id, ${request.customerId}, ${request.amountMinor},
        ${request.currency}, ${request.description ?? null},
        ${request.metadata === undefined ? null : sql.jsonb(request.metadata)},
        ${input.providerKey}, 'reserved'
      FROM claimed
      RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM intent) AS claimed, k.request_hash, k.recovery_point,
      k.charge_id::text AS charge_id, k.locked_until > now() AS lease_held, k.response_status,
      k.response_body
    FROM (SELECT 1) AS one
    LEFT JOIN ${tables.keys} k
      ON NOT EXISTS (SELECT 1 FROM claimed)
      AND k.merchant_id = ${request.merchantId} AND k.operation = ${OPERATION}
      AND k.key = ${input.key}
  `)) as FloorClaimRow;
}

async function readKey(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  key: string,
): Promise<FloorClaimRow> {
  const row = (await pool.maybeOne(sql.unsafe`
    SELECT false AS claimed, request_hash, recovery_point, charge_id::text AS charge_id,
      locked_until > now() AS lease_held, response_status, response_body
    FROM ${tables.keys}
    WHERE merchant_id = ${merchantId} AND operation = ${OPERATION} AND key = ${key}
  `)) as FloorClaimRow | null;
  if (!row) {
    throw new Error('floor-slonik: a key that refused the claim is gone, which nothing deletes');
  }
  return row;
}
