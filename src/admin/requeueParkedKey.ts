import { randomUUID } from 'node:crypto';
import type { EngineEnv } from '../engine/engineEnv.js';
import { leaseLost } from '../engine/leaseLost.js';
import { movementDefinition } from '../engine/movementDefinitions.js';
import { insertAdminAction } from '../store/insertAdminAction.js';
import { requeueKey } from '../store/requeueKey.js';
import { withStore } from '../store/storeErrors.js';
import { takeParkedKey } from '../store/takeParkedKey.js';
import { inputIssues, MAX_TEXT, readTarget, TARGET_FIELDS } from './adminInput.js';
import type { RequeueTarget } from './types.js';

const REQUEUE_FIELDS: ReadonlySet<string> = new Set([...TARGET_FIELDS, 'actor', 'reason']);

/**
 * Puts a key parked in `failed` back for the sweeper and client retries: `engine.requeue`. Taken
 * with a fresh lock token by the statement that checks it is parked, audited (`actor` and
 * `reason`, both required) and requeued in one transaction, so a racing resolve or second requeue
 * cannot both win. Returns false when no parked key matched.
 *
 * @throws {InvalidRequestError} a malformed merchant, key or operation, a missing or malformed
 * actor or reason; nothing
 * written.
 * @throws {StoreUnavailableError} PostgreSQL is out of reach.
 */
export async function requeueParkedKey(env: EngineEnv, target: RequeueTarget): Promise<boolean> {
  const issues = inputIssues();
  const scoped = readTarget(issues, target, env.operation);
  issues.onlyKnown(target, REQUEUE_FIELDS);
  const t = (typeof target === 'object' && target !== null ? target : {}) as Record<
    string,
    unknown
  >;
  // Who and why are stored with the action, as a resolve's are: a requeue is a person's act too.
  const actor = issues.text('actor', t.actor, MAX_TEXT.actor, true) ? t.actor : '';
  const reason = issues.text('reason', t.reason, MAX_TEXT.reason, true) ? t.reason : '';
  issues.done();
  const lockToken = randomUUID();
  const pool = await env.pool();
  const requeued = await withStore(() =>
    pool.transaction(async (tx) => {
      const parked = await takeParkedKey(tx, env.tables, {
        ...scoped,
        lockToken,
        leaseMs: env.leaseMs,
      });
      if (!parked) return false;
      const audit = await insertAdminAction(tx, env.tables, {
        ...scoped,
        lockToken,
        action: 'requeue',
        // Where requeueKey sends it: back to `reserved` when the intent exists (a refund's or
        // capture's movement is written with its claim).
        result:
          parked.providerKey === null && !movementDefinition(scoped.operation)
            ? 'started'
            : 'reserved',
        actor,
        reason,
        providerChargeId: null,
        declineCode: null,
      });
      if (!audit || !(await requeueKey(tx, env.tables, scoped))) throw leaseLost();
      return true;
    }),
  );
  if (requeued) env.observer.event({ type: 'requeued', ...scoped, by: actor });
  return requeued;
}
