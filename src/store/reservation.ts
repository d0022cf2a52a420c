import { z } from 'zod';
import { sql, type FragmentSqlToken } from 'slonik';

/** When a charge intent was written and how long ago, both by PostgreSQL's clock. */
export type Reservation = { at: Date; ageMs: number };

/** The columns {@link reservationSelect} adds, checked at the boundary. */
export const reservationColumns = {
  reserved_at_ms: z.number().nullable(),
  reservation_age_ms: z.number().nullable(),
};

/**
 * The reservation time of `c` (the charges row, absent at `started`), measured in the database:
 * its age never depends on this process's wall clock.
 */
export const reservationSelect: FragmentSqlToken = sql.fragment`
  (extract(epoch FROM c.created_at) * 1000)::float8 AS reserved_at_ms,
  (extract(epoch FROM now() - c.created_at) * 1000)::float8 AS reservation_age_ms`;

export function toReservation(row: {
  reserved_at_ms: number | null;
  reservation_age_ms: number | null;
}): Reservation | null {
  if (row.reserved_at_ms === null || row.reservation_age_ms === null) return null;
  return { at: new Date(row.reserved_at_ms), ageMs: row.reservation_age_ms };
}
