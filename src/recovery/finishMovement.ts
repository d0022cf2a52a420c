import type { MovementDefinition } from '../engine/movementDefinitions.js';
import { movementPhase } from '../engine/movementPhase.js';
import type { EngineEnv } from '../engine/engineEnv.js';
import { errorText } from '../engine/releaseQuietly.js';
import { readHeldMovement } from '../store/movementStore.js';
import type { AbandonedKey } from '../store/pickAbandonedKeys.js';
import { withStore } from '../store/storeErrors.js';
import { resultOfFailure, type KeyResult, type SweepSettings } from './sweep.js';

/**
 * Finishes an abandoned refund or capture the sweeper picked, as `finishKey` does a charge: the
 * provider is asked first and what it made is adopted; when it made nothing, the movement is
 * cancelled (its reservation given back to the charge) or, with `onAbandoned: 'complete'`, made
 * now. A refusal the claim wrote but never stored is stored.
 */
export async function finishMovement(
  env: EngineEnv,
  settings: SweepSettings,
  def: MovementDefinition,
  key: AbandonedKey,
  pickSentAt: number,
  park: (reason: string) => Promise<KeyResult>,
): Promise<KeyResult> {
  const scoped = { merchantId: key.merchantId, operation: key.operation, key: key.key };
  let stored: { chargeId: string; reason: string | null };
  try {
    stored = storedRequest(key.request);
  } catch (error) {
    return park(`stored request cannot be read: ${errorText(error)}`);
  }
  const taken = await withStore(async () =>
    readHeldMovement(await env.pool(), env.tables, {
      merchantId: key.merchantId,
      movementId: key.chargeId,
      attempts: key.attempts,
    }),
  );
  if (!taken) return park('the key has no movement to finish');
  try {
    const { source } = await movementPhase(
      env,
      {
        scoped,
        lockToken: key.lockToken,
        lease: { setAt: pickSentAt },
        def,
        movementId: taken.movementId,
        chargeId: stored.chargeId,
        providerKey: taken.providerKey,
        reason: stored.reason,
        held: taken.movement,
        reservation: taken.reservation,
        providerMayHaveMoved: true,
      },
      settings.onAbandoned === 'complete' ? 'create' : 'cancel',
      'sweeper',
    );
    return source === 'adopted' ? 'adopted' : source === 'cancelled' ? 'cancelled' : 'resumed';
  } catch (error) {
    return resultOfFailure(error, settings, key, park);
  }
}

/** The charge id and reason of a stored refund or capture request. */
function storedRequest(text: string): { chargeId: string; reason: string | null } {
  const parsed = JSON.parse(text) as { chargeId?: unknown; reason?: unknown };
  if (typeof parsed.chargeId !== 'string') throw new Error('no chargeId');
  return {
    chargeId: parsed.chargeId,
    reason: typeof parsed.reason === 'string' ? parsed.reason : null,
  };
}
