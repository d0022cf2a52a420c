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
  const charge = wellFormed(answer) ?? parseAnswer(answer);
  if (typeof charge === 'string') return { ok: false, reason: charge };
  if (charge.amountMinor !== request.amountMinor || charge.currency !== request.currency) {
    return {
      ok: false,
      reason: `provider charge ${charge.id} is for ${charge.amountMinor} ${charge.currency}, the request for ${request.amountMinor} ${request.currency}`,
    };
  }
  return { ok: true, charge };
}

/**
 * The answer as a charge when it fits the schema's rules, checked by hand (every fresh charge
 * and every adoption passes here: the schema library costs microseconds a charge need not pay);
 * null for anything else, which the schema then words. Only the port's fields are kept, as the
 * schema keeps them.
 */
export function wellFormed(answer: unknown): ProviderCharge | null {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return null;
  const { id, status, amountMinor, currency, declineCode } = answer as Record<string, unknown>;
  if (typeof id !== 'string' || id.length < 1 || id.length > 255) return null;
  if (status !== 'succeeded' && status !== 'declined') return null;
  if (!Number.isInteger(amountMinor) || (amountMinor as number) <= 0) return null;
  if (typeof currency !== 'string') return null;
  const amount = amountMinor as number;
  // As the schema does: the optional field is kept whenever the answer has it, even undefined.
  if (!('declineCode' in answer)) return { id, status, amountMinor: amount, currency };
  if (declineCode === undefined) return { id, status, amountMinor: amount, currency, declineCode };
  if (typeof declineCode !== 'string' || declineCode.length > 255) return null;
  return { id, status, amountMinor: amount, currency, declineCode };
}

/** The answer through the schema: the charge, or what is wrong with it. */
export function parseAnswer(answer: unknown): ProviderCharge | string {
  const parsed = providerChargeSchema.safeParse(answer);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || 'answer'}: ${issue.message}`)
      .join('; ');
    return `malformed provider charge (${issues})`;
  }
  return parsed.data;
}
