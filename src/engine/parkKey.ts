import { sql, type DatabaseTransactionConnection } from 'slonik';
import { ProviderAnswerInvalidError, SimulatedCrashError } from '../errors.js';
import { failKey } from '../store/failKey.js';
import type { ScopedKey } from '../store/keyState.js';
import { withStore } from '../store/storeErrors.js';
import { recordedElsewhere, type RecordedOnce } from '../store/uniqueViolation.js';
import { REFUSED_ANSWER_REASON_PREFIX } from './checkProviderAnswer.js';
import type { EngineEnv } from './engineEnv.js';
import { leaseLost } from './leaseLost.js';

/** A key an attempt holds, and the charge (or refund, or capture) it guards, for events. */
export type HeldKey = { scoped: ScopedKey; lockToken: string; subjectId: string };

/** The lease was taken over: reported, and the error the attempt stops with. */
export function lostLease(env: EngineEnv, held: HeldKey) {
  env.observer.event({ type: 'lease_lost', ...held.scoped, chargeId: held.subjectId });
  return leaseLost();
}

/** Parks the key in `failed` with `reason`, fenced by the lock token, whatever the operation. */
export async function parkKey(env: EngineEnv, held: HeldKey, reason: string): Promise<void> {
  const pool = await env.pool();
  const parked = await withStore(() =>
    failKey(pool, env.tables, {
      merchantId: held.scoped.merchantId,
      operation: held.scoped.operation,
      key: held.scoped.key,
      lockToken: held.lockToken,
      reason,
    }),
  );
  if (!parked) throw lostLease(env, held);
  env.observer.event({ type: 'parked', ...held.scoped, reason });
}

/**
 * A provider answer that cannot be recorded: money may have moved, but not as asked (or the
 * answer cannot tell). Parks the key with the reason for a person; never completes it.
 */
export async function parkRefusedAnswer(
  env: EngineEnv,
  held: HeldKey,
  reason: string,
): Promise<never> {
  await parkKey(env, held, `${REFUSED_ANSWER_REASON_PREFIX}${reason}`);
  throw new ProviderAnswerInvalidError(reason);
}

/**
 * A completion the unique index refused: the provider answered with a `kind` id another key of
 * this merchant already recorded, so not this request's, whatever it says (recorded twice, the
 * books would count it twice). Parks the key under the attempt's lease; any other error passes
 * through.
 */
export function parkIfRecordedElsewhere(
  env: EngineEnv,
  held: HeldKey,
  error: unknown,
  kind: RecordedOnce,
  providerId: string | null,
): Promise<never> {
  if (!recordedElsewhere(error, kind)) throw error;
  return parkRefusedAnswer(
    env,
    held,
    `provider ${kind} ${providerId} is already recorded for another ${kind} of this merchant`,
  );
}

/**
 * The `beforeCompleteCommit` crash: `write` runs the completion (and any hook) in a transaction,
 * then the connection dies before COMMIT, as it would with the process: PostgreSQL terminates
 * the backend and rolls the transaction back. Nothing is released.
 */
export async function crashBeforeCommit(
  env: EngineEnv,
  write: (tx: DatabaseTransactionConnection) => Promise<void>,
): Promise<never> {
  const pool = await env.pool();
  await pool
    .transaction(async (tx) => {
      await write(tx);
      await tx.query(sql.unsafe`SELECT pg_terminate_backend(pg_backend_pid())`);
    })
    .catch(() => undefined);
  throw new SimulatedCrashError('beforeCompleteCommit');
}
