import type { ChargeEngine } from '../engine/createChargeEngine.js';
import type { MovementStatus } from '../engine/movementTypes.js';
import type { ChargeStatus } from '../engine/types.js';
import type { PlannedOperation } from './createChaosPlan.js';

/** What any operation's call answered, whatever its kind. */
export type OperationAnswer = {
  status: ChargeStatus | MovementStatus;
  replayed: boolean;
  body: string;
  /** The charge: the one made, or the one moved on. */
  chargeId: string;
  /** The provider's id of what was made (charge, refund or capture), if anything. */
  providerId: string | null;
  /** Why chargeonce refused a refund or capture (`refusal` in its body), else null. */
  refusal: string | null;
};

/** Sends one attempt of an operation through an engine. */
export type OperationCall = (engine: ChargeEngine) => Promise<OperationAnswer>;

/**
 * The call of an operation: `processCharge`, or `processRefund`/`processCapture` on the charge
 * `chargeId` (which only the charge's outcome tells, so a movement needs it).
 *
 * @throws {Error} a movement without the id of its charge: a bug of the harness.
 */
export function sendOperation(op: PlannedOperation, chargeId?: string): OperationCall {
  if (op.kind === 'charge') {
    return async (engine) => {
      const outcome = await engine.processCharge(op.key, op.request);
      return {
        status: outcome.status,
        replayed: outcome.replayed,
        body: outcome.body,
        chargeId: outcome.chargeId,
        providerId: outcome.providerChargeId,
        refusal: null,
      };
    };
  }
  if (chargeId === undefined) throw new Error(`the ${op.kind} ${op.key} has no charge to move on`);
  const amount = op.amountMinor === undefined ? {} : { amountMinor: op.amountMinor };
  if (op.kind === 'capture') {
    return async (engine) => {
      const outcome = await engine.processCapture(op.key, {
        merchantId: op.merchantId,
        chargeId,
        ...amount,
      });
      return movementAnswer(outcome, outcome.providerCaptureId);
    };
  }
  return async (engine) => {
    const outcome = await engine.processRefund(op.key, {
      merchantId: op.merchantId,
      chargeId,
      amountMinor: op.amountMinor ?? 1,
      ...(op.reason === undefined ? {} : { reason: op.reason }),
    });
    return movementAnswer(outcome, outcome.providerRefundId);
  };
}

function movementAnswer(
  outcome: { status: MovementStatus; replayed: boolean; body: string; chargeId: string },
  providerId: string | null,
): OperationAnswer {
  return {
    status: outcome.status,
    replayed: outcome.replayed,
    body: outcome.body,
    chargeId: outcome.chargeId,
    providerId,
    refusal: outcome.status === 'refused' ? refusalIn(outcome.body) : null,
  };
}

function refusalIn(body: string): string {
  try {
    const refusal = (JSON.parse(body) as { refusal?: unknown }).refusal;
    return typeof refusal === 'string' ? refusal : 'unknown';
  } catch {
    return 'unknown';
  }
}
