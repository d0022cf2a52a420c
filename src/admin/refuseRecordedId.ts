import { InvalidRequestError } from '../errors.js';
import {
  PROVIDER_CHARGE_ID_INDEX,
  PROVIDER_REFUND_ID_INDEX,
  violatesUnique,
} from '../store/uniqueViolation.js';

/** The provider ids a merchant records once, by the field a resolve names them with. */
const RECORDED_ONCE = {
  providerChargeId: { index: PROVIDER_CHARGE_ID_INDEX, of: 'charge' },
  providerRefundId: { index: PROVIDER_REFUND_ID_INDEX, of: 'refund' },
} as const;

/**
 * Rethrows `error`, as the person's mistake when it is the unique index on `field`'s provider id:
 * an id the merchant already recorded for another charge (or refund). Recorded twice, the books
 * would count one provider charge (or refund) twice.
 *
 * @throws {InvalidRequestError} naming `field`, the index's refusal its cause.
 */
export function refuseRecordedId(field: keyof typeof RECORDED_ONCE, error: unknown): never {
  const { index, of } = RECORDED_ONCE[field];
  if (!violatesUnique(error, index)) throw error;
  throw new InvalidRequestError(
    [{ field, message: `is already recorded for another ${of} of this merchant` }],
    { cause: error },
  );
}
