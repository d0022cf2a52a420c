import { InvalidRequestError } from '../errors.js';
import { recordedElsewhere, type RecordedOnce } from '../store/uniqueViolation.js';

/** What each provider id a resolve names is the id of. */
const FIELD_KIND: Record<'providerChargeId' | 'providerRefundId', RecordedOnce> = {
  providerChargeId: 'charge',
  providerRefundId: 'refund',
};

/**
 * Rethrows `error`, as the person's mistake when it is the unique index on `field`'s provider id:
 * an id the merchant already recorded for another charge (or refund). Recorded twice, the books
 * would count one provider charge (or refund) twice.
 *
 * @throws {InvalidRequestError} naming `field`, the index's refusal its cause.
 */
export function refuseRecordedId(field: keyof typeof FIELD_KIND, error: unknown): never {
  const kind = FIELD_KIND[field];
  if (!recordedElsewhere(error, kind)) throw error;
  throw new InvalidRequestError(
    [{ field, message: `is already recorded for another ${kind} of this merchant` }],
    { cause: error },
  );
}
