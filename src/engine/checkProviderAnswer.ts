import { z } from 'zod';
import type { ProviderCharge } from '../provider/PaymentProvider.js';
import type { ChargeRequest } from '../request.js';

/** How the reason of a key parked for a refused answer begins (`listStuck()`, the reconciler). */
export const REFUSED_ANSWER_REASON_PREFIX = 'provider answer refused: ';

const providerChargeSchema = z.object({
  id: z.string().min(1).max(255),
  status: z.enum(['succeeded', 'declined']),
  amountMinor: z.number().int().positive(),
  currency: z.string(),
  declineCode: z.string().max(255).optional(),
});

/**
 * Checks a charge the provider created or a lookup found against the port's type and against
 * the request it is for. Returns the charge, or why it cannot be recorded: an answer for another
 * amount or currency, or one that does not fit the port, must never complete as a success (the
 * stored body would say something the provider did not do).
 */
export function checkProviderAnswer(
  answer: unknown,
  request: ChargeRequest,
): { ok: true; charge: ProviderCharge } | { ok: false; reason: string } {
  const parsed = providerChargeSchema.safeParse(answer);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || 'answer'}: ${issue.message}`)
      .join('; ');
    return { ok: false, reason: `malformed provider charge (${issues})` };
  }
  const charge = parsed.data;
  if (charge.amountMinor !== request.amountMinor || charge.currency !== request.currency) {
    return {
      ok: false,
      reason: `provider charge ${charge.id} is for ${charge.amountMinor} ${charge.currency}, the request for ${request.amountMinor} ${request.currency}`,
    };
  }
  return { ok: true, charge };
}
