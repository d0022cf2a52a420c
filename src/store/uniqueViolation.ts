/**
 * The unique indexes on a merchant's provider ids, by what they name: one local charge per
 * provider charge, one local refund per provider refund (captures have none: a provider may name
 * a capture by its charge's id).
 */
const PROVIDER_ID_INDEX = {
  charge: 'charges_provider_charge_id_key',
  refund: 'movements_provider_refund_id_key',
} as const;

/** What a provider id names, where chargeonce records each once per merchant. */
export type RecordedOnce = keyof typeof PROVIDER_ID_INDEX;

/**
 * Whether PostgreSQL refused a write because the merchant already recorded its provider `kind`
 * id for another one: the unique index, in `error` or any of its causes (the drivers wrap the
 * server's error, which names the index).
 */
export function recordedElsewhere(error: unknown, kind: RecordedOnce): boolean {
  const index = PROVIDER_ID_INDEX[kind];
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const fields = e as { code?: unknown; constraint?: unknown };
    if (fields.code === '23505' && fields.constraint === index) return true;
  }
  return false;
}
