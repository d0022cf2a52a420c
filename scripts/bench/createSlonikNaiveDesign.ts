import { randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import type { ChargeRequest } from '../../src/request.js';
import { tablesIn, type Tables } from '../../src/store/tables.js';
import type { BenchProvider } from './createBenchProvider.js';
import { createSlonikPool } from './createSlonikPool.js';
import type { Design, DesignConnection } from './Design.js';
import type { NaiveKeyRow } from './NaiveKeyRow.js';
import { fingerprintRequest } from './fingerprintRequest.js';
import { responseBody } from './responseBody.js';

const OPERATION = 'charge';
const NEVER_ABORTED = new AbortController().signal;

/**
 * The naive phased design (see createNaiveDesign) on slonik: the same statements and
 * transactions as SQL text, parsed and planned on every call.
 */
export async function createSlonikNaiveDesign(
  connection: DesignConnection,
  provider: BenchProvider,
): Promise<Design> {
  const pool = await createSlonikPool(connection.url, connection.poolSize);
  const tables = tablesIn(connection.schema);
  return {
    name: 'naive-slonik',
    end: () => pool.end(),
    async charge(key, request) {
      const { canonical, hash } = fingerprintRequest(request);
      const won = await claimKey(pool, tables, key, request.merchantId, hash, canonical);
      if (!won) {
        const rec = await loadKey(pool, tables, request.merchantId, key);
        if (rec.request_hash !== hash) return { kind: 'reused' };
        if (rec.recovery_point === 'completed')
          return { kind: 'replayed', chargeId: rec.charge_id };
        return { kind: 'inUse' };
      }
      const state = await loadKey(pool, tables, request.merchantId, key);
      const chargeId = state.charge_id;
      if (state.recovery_point === 'started') {
        await reserveAndMark(pool, tables, key, chargeId, request);
      }
      const charge = await provider.createCharge(
        {
          providerKey: key,
          merchantId: request.merchantId,
          chargeId,
          customerId: request.customerId,
          amountMinor: request.amountMinor,
          currency: request.currency,
        },
        { signal: NEVER_ABORTED },
      );
      const body = responseBody(chargeId, request, charge);
      await pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`
          UPDATE ${tables.charges}
          SET status = ${charge.status}, provider_charge_id = ${charge.id}, updated_at = now()
          WHERE merchant_id = ${request.merchantId} AND id = ${chargeId}::uuid`);
        await tx.query(sql.unsafe`
          UPDATE ${tables.keys}
          SET recovery_point = 'completed', response_status = 201, response_body = ${body},
            completed_at = now(), updated_at = now()
          WHERE merchant_id = ${request.merchantId} AND operation = ${OPERATION} AND key = ${key}`);
      });
      return { kind: 'charged', chargeId };
    },
  };
}

async function claimKey(
  pool: DatabasePool,
  tables: Tables,
  key: string,
  merchantId: string,
  hash: string,
  canonical: string,
): Promise<boolean> {
  const result = await pool.query(sql.unsafe`
    INSERT INTO ${tables.keys} (merchant_id, operation, key, request_hash, request,
      recovery_point, charge_id)
    VALUES (${merchantId}, ${OPERATION}, ${key}, ${hash}, ${canonical}, 'started',
      ${randomUUID()}::uuid)
    ON CONFLICT (merchant_id, operation, key) DO NOTHING`);
  return result.rowCount === 1;
}

async function loadKey(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  key: string,
): Promise<NaiveKeyRow> {
  // The claim committed before this statement began, so the row is visible here.
  return (await pool.one(sql.unsafe`
    SELECT request_hash, recovery_point, charge_id::text AS charge_id, response_status,
      response_body
    FROM ${tables.keys}
    WHERE merchant_id = ${merchantId} AND operation = ${OPERATION} AND key = ${key}`)) as NaiveKeyRow;
}

async function reserveAndMark(
  pool: DatabasePool,
  tables: Tables,
  key: string,
  chargeId: string,
  request: ChargeRequest,
): Promise<void> {
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO ${tables.charges} (merchant_id, id, customer_id, amount_minor, currency,
        description, metadata, provider_key, status)
      VALUES (${request.merchantId}, ${chargeId}::uuid, ${request.customerId},
        ${request.amountMinor}, ${request.currency}, ${request.description ?? null},
        ${request.metadata === undefined ? null : sql.jsonb(request.metadata)}, ${key},
        'reserved')`);
    await tx.query(sql.unsafe`
      UPDATE ${tables.keys} SET recovery_point = 'reserved', updated_at = now()
      WHERE merchant_id = ${request.merchantId} AND operation = ${OPERATION} AND key = ${key}`);
  });
}
