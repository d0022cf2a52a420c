import type { HookTransaction } from './hookTransaction.js';

/**
 * Refunds and captures: operations that move money on a charge chargeonce already made, each run
 * once per key by the same claim → reserve → provider → complete machinery as the charge.
 */

/** What `processRefund` is asked: part or all of a captured charge back to the customer. */
export type RefundRequest = {
  merchantId: string;
  /** chargeonce's id of the charge to refund (`ChargeOutcome.chargeId`). */
  chargeId: string;
  /** How much, in the charge's currency's minor unit: a positive safe integer. */
  amountMinor: number;
  /** Why, for the provider and the records (at most 200 characters). */
  reason?: string;
};

/** What `processCapture` is asked: to take the money of a charge made with `capture: false`. */
export type CaptureRequest = {
  merchantId: string;
  /** chargeonce's id of the authorized charge. */
  chargeId: string;
  /** How much to capture; at most what was authorized. Absent: all of it. */
  amountMinor?: number;
};

/**
 * How a refund or capture ended:
 * - `succeeded`: the provider moved the money (201);
 * - `failed`: the provider refused it, a real answer (402);
 * - `refused`: chargeonce refused it before the provider was asked, because it would break an
 *   invariant: the charge is unknown or not succeeded, the refunds would exceed what was
 *   captured, the authorization was already captured (422; `refusal` in the body says which);
 * - `cancelled`: the recovery worker found nothing at the provider and gave up (410).
 * Every one of them is stored and replayed.
 */
export type MovementStatus = 'succeeded' | 'failed' | 'refused' | 'cancelled';

/** Why chargeonce refused a refund or capture. */
export type MovementRefusal =
  | 'charge_not_found'
  | 'charge_not_succeeded'
  | 'charge_not_captured'
  | 'charge_not_capturable'
  | 'exceeds_refundable'
  | 'exceeds_authorized'
  /** Never given: a refund or capture carries no currency of its own (its charge's is used). */
  | 'currency_mismatch'
  /** A `reserve` hook threw `ChargeRejectedError`: the response is the hook's. */
  | 'rejected';

/** The result of `processRefund`: the same on the first attempt and on every replay. */
export type RefundOutcome = {
  status: MovementStatus;
  httpStatus: number;
  /** The response body as JSON text, byte for byte what the first attempt produced. */
  body: string;
  replayed: boolean;
  /** chargeonce's refund id (a UUID). */
  refundId: string;
  chargeId: string;
  /** The provider's refund id, or null when the provider made none. */
  providerRefundId: string | null;
};

/** The result of `processCapture`: the same on the first attempt and on every replay. */
export type CaptureOutcome = {
  status: MovementStatus;
  httpStatus: number;
  body: string;
  replayed: boolean;
  /** chargeonce's capture id (a UUID). */
  captureId: string;
  chargeId: string;
  /** The provider's id of the capture, or null when the provider made none. */
  providerCaptureId: string | null;
};

/** What every hook of a refund or capture is told about the movement it runs for. */
export type MovementHookContext = {
  merchantId: string;
  /** `refund` or `capture`: the stored operation name of the key. */
  operation: 'refund' | 'capture';
  key: string;
  /** chargeonce's id of the refund or capture (`refundId`, `captureId`). */
  movementId: string;
  /** The charge it moves money on. */
  chargeId: string;
  providerKey: string;
  /** What is reserved on the charge, in its currency's minor unit. */
  amountMinor: number;
  currency: string;
  /** A refund's reason; null for a capture or a refund without one. */
  reason: string | null;
};

/** What the `complete` hook of a refund or capture is told on top of {@link MovementHookContext}. */
export type MovementCompleteHookContext = MovementHookContext & {
  status: 'succeeded' | 'failed';
  /** The provider's id of the refund or capture. */
  providerMovementId: string;
  failureCode: string | null;
  /** True when it was found by the provider lookup after an interrupted attempt. */
  adopted: boolean;
};

/**
 * The caller's own SQL in a refund's or capture's phase transactions, as `ChargeHooks` are for a
 * charge: it commits with the phase or not at all. A movement that chargeonce refuses (it would
 * break an invariant) runs none of them: nothing was reserved, nothing moved.
 */
export type MovementHooks = {
  /**
   * Runs in the transaction that claims the key and reserves the amount on the charge, before
   * money moves. Throw `ChargeRejectedError(status, body)` to end the movement `refused`
   * (`refusal: 'rejected'`) with that stored response, the reservation given back; any other
   * throw rolls the claim back (nothing written, the key is free).
   */
  reserve?: (tx: HookTransaction, ctx: MovementHookContext) => Promise<void>;
  /** Runs in the transaction that records the provider's answer (mark the order refunded). */
  complete?: (tx: HookTransaction, ctx: MovementCompleteHookContext) => Promise<void>;
  /**
   * Runs in the transaction where the recovery worker cancels a movement the provider never
   * made: release what `reserve` held.
   */
  cancel?: (tx: HookTransaction, ctx: MovementHookContext) => Promise<void>;
};
