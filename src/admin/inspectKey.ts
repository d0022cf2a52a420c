import { sql } from 'slonik';
import type { EngineEnv } from '../engine/engineEnv.js';
import { readAdminActions } from '../store/readAdminActions.js';
import { readKeyDetails } from '../store/readKeyDetails.js';
import { withStore } from '../store/storeErrors.js';
import { inputIssues, readTarget, TARGET_FIELDS } from './adminInput.js';
import { keyHistory } from './keyHistory.js';
import type { KeyInspection, KeyTarget } from './types.js';

const INSPECT_FIELDS: ReadonlySet<string> = new Set(TARGET_FIELDS);

/**
 * Everything stored about one key: `engine.inspect`. Read in one snapshot, so the key, its
 * charge and its audit trail agree with each other. Null when there is no such key.
 *
 * @throws {InvalidRequestError} a missing or malformed merchant, key or operation; nothing read.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function inspectKey(env: EngineEnv, target: KeyTarget): Promise<KeyInspection | null> {
  const issues = inputIssues();
  const scoped = readTarget(issues, target, env.operation);
  issues.onlyKnown(target, INSPECT_FIELDS);
  issues.done();
  const pool = await env.pool();
  return withStore(() =>
    pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
      const details = await readKeyDetails(tx, env.tables, scoped);
      if (!details) return null;
      const audit = await readAdminActions(tx, env.tables, {
        ...scoped,
        chargeId: details.chargeId,
      });
      return {
        ...scoped,
        recoveryPoint: details.recoveryPoint,
        request: parseRequest(details.request),
        requestHash: details.requestHash,
        attempts: details.attempts,
        lease: {
          held: details.leaseHeld,
          remainingMs: details.leaseHeld ? details.leaseRemainingMs : 0,
          until: details.lockedUntil,
        },
        lastError: details.lastError,
        charge: details.charge && { id: details.chargeId, ...details.charge },
        movement: details.movement && { id: details.chargeId, ...details.movement },
        outcome:
          details.responseStatus === null || details.responseBody === null
            ? null
            : { httpStatus: details.responseStatus, body: details.responseBody },
        createdAt: details.createdAt,
        updatedAt: details.updatedAt,
        completedAt: details.completedAt,
        failedAt: details.failedAt,
        history: keyHistory(details, audit),
        audit,
      };
    }),
  );
}

/** The stored canonical request as an object; null for a tombstone's empty text or non-JSON. */
function parseRequest(text: string): Record<string, unknown> | null {
  if (text === '') return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
