/** The unique index on a merchant's provider charge ids (one local charge per provider charge). */
export const PROVIDER_CHARGE_ID_INDEX = 'charges_provider_charge_id_key';

/** The unique index on a merchant's provider refund ids (one local refund per provider refund). */
export const PROVIDER_REFUND_ID_INDEX = 'movements_provider_refund_id_key';

/**
 * Whether PostgreSQL refused a write under the unique index `index`: in `error` or any of its
 * causes (the drivers wrap the server's error, which names the index).
 */
export function violatesUnique(error: unknown, index: string): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const fields = e as { code?: unknown; constraint?: unknown };
    if (fields.code === '23505' && fields.constraint === index) return true;
  }
  return false;
}
