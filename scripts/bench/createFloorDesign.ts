import { randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import type { ChargeRequest } from '../../src/request.js';
import { tablesIn, type Tables } from '../../src/store/tables.js';
import type { BenchProvider } from './createBenchProvider.js';
import type { Design, DesignOutcome } from './Design.js';
import { fingerprintRequest } from './fingerprintRequest.js';
import { responseBody } from './responseBody.js';

/** The schema the floor's tables live in: the same migration as the engine's. */
export const FLOOR_SCHEMA = 'bench_floor';

const LEASE_MS = 30_000;
const OPERATION = 'charge';

/** The floor answers provider calls with no deadline of its own: it is a floor. */
const NEVER_ABORTED = new AbortController().signal;

/**
 * The claim's one row. Declared as a type, not a zod schema: the pool checks `sql.type` rows
 * against their schema, and the floor does only what correctness needs.
 */
type ClaimRow = {
  claimed: boolean;
  request_hash: string | null;
  recovery_point: string | null;
  charge_id: string | null;
  lease_held: boolean | null;
  response_status: number | null;
  response_body: string | null;
};

/**
 * The least database work any correct design must do, as bare SQL on the same kind of pool: one
 * statement that claims the key and writes the charge intent (committed before money moves), the
 * provider call, one statement that records the result on both rows (committed after). A replay is
 * the first statement alone. It writes what the engine writes — key row with request hash and
 * canonical request, charge intent row, then the completion of both — and nothing more: no
 * request validation, no provider deadline, no schema check of rows. Resuming an abandoned key is
 * not part of any scenario, so it is not written here.
 */
export function createFloorDesign(pool: DatabasePool, provider: BenchProvider): Design {
  const tables = tablesIn(FLOOR_SCHEMA);
  return {
    name: 'floor',
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
      if (!row.claimed) return existing(row, hash);
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
      if (!completed) throw new Error('floor: lease lost, which no scenario provokes');
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
): Promise<ClaimRow> {
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
  `)) as ClaimRow;
}

async function readKey(
  pool: DatabasePool,
  tables: Tables,
  merchantId: string,
  key: string,
): Promise<ClaimRow> {
  const row = (await pool.maybeOne(sql.unsafe`
    SELECT false AS claimed, request_hash, recovery_point, charge_id::text AS charge_id,
      locked_until > now() AS lease_held, response_status, response_body
    FROM ${tables.keys}
    WHERE merchant_id = ${merchantId} AND operation = ${OPERATION} AND key = ${key}
  `)) as ClaimRow | null;
  if (!row) throw new Error('floor: a key that refused the claim is gone, which nothing deletes');
  return row;
}

function existing(row: ClaimRow, hash: string): DesignOutcome {
  if (row.request_hash !== hash) return { kind: 'reused' };
  // A replay returns the stored response (read by the same statement); the bench keeps its id.
  if (row.recovery_point === 'completed' && row.charge_id !== null) {
    return { kind: 'replayed', chargeId: row.charge_id };
  }
  if (row.lease_held) return { kind: 'inUse' };
  throw new Error('floor: resuming an abandoned key is not part of any scenario');
}
