import { IdempotencyKeyInUseError } from '../errors.js';
import { pause } from '../pause.js';
import { classifyAttemptError } from './classifyAttemptError.js';
import type { PlannedOperation } from './createChaosPlan.js';
import type { HeldClaimEnd, OperationSink } from './OperationSink.js';
import type { ClientSettings } from './runOperation.js';
import type { OperationCall } from './sendOperation.js';
import { watchAttempt } from './watchAttempt.js';

/**
 * Sends an operation's request a second time, `delayMs` from now, through the process's engine
 * for second submissions (the other in-progress policy): a double tap, or a load balancer's
 * retry that reached another server while the first was at work. It runs with no faults of its
 * own and never retries; what it gets goes to `sink` like any attempt (its outcome is checked
 * against the stored one like any other), but it never ends the operation: its client does.
 */
export async function sendDuplicate(
  settings: ClientSettings,
  op: PlannedOperation,
  call: OperationCall,
  sink: OperationSink,
  delayMs: number,
  /** Sent while the first attempt's claim is held uncommitted (see `holdClaim`). */
  whileHeld?: { released(): boolean },
): Promise<void> {
  await pause(delayMs, settings.signal);
  if (settings.signal?.aborted) return;
  const shared = whileHeld ? settings.engines.forHeldRetry() : settings.engines.forDuplicate();
  const watch = watchAttempt(shared.waits);
  const scoped = {
    op: op.index,
    operation: op.kind,
    merchantId: op.merchantId,
    key: op.key,
    stalled: false,
    suspended: false,
    clockStepped: false,
    duplicate: true,
  };
  const sentAt = performance.now();
  // Whether it was answered while the claim was still held, and with a 409, told with whatever
  // it got; and, through an engine that refuses a key in progress, how soon.
  const held = (inUse: boolean): { heldClaim?: HeldClaimEnd; heldRefusalMs?: number } => {
    if (!whileHeld) return {};
    if (whileHeld.released()) return { heldClaim: 'blocked' };
    if (!inUse) return { heldClaim: 'otherwise' };
    const tookMs = shared.waits ? {} : { heldRefusalMs: Math.round(performance.now() - sentAt) };
    return { heldClaim: 'answered', ...tookMs };
  };
  try {
    const answer = await shared.router.run(scoped, watch.route, () => call(shared.engine));
    sink.attempt({
      ...scoped,
      ...held(false),
      wait: watch.wait('outcome'),
      kind: 'outcome',
      status: answer.status,
      replayed: answer.replayed,
      // Adoptions are counted for the operation's own client.
      adopted: false,
      body: answer.body,
      chargeId: answer.chargeId,
      refusal: answer.refusal,
    });
  } catch (error) {
    const wait = watch.wait(error instanceof IdempotencyKeyInUseError ? 'inUse' : 'error');
    const classified = classifyAttemptError(error);
    sink.attempt({
      ...scoped,
      ...held(error instanceof IdempotencyKeyInUseError),
      wait,
      ...(classified.kind === 'retry' ? classified.event : classified),
    });
  }
}
