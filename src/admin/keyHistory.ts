import type { KeyDetails } from '../store/readKeyDetails.js';
import type { AuditEntry, KeyHistoryEvent, KeyHistoryEventName } from './types.js';

/** Events that share a timestamp (a claim that wrote the intent too) keep the phase order. */
const PHASE_ORDER: Record<KeyHistoryEventName, number> = {
  claimed: 0,
  reserved: 1,
  parked: 2,
  requeued: 3,
  resolved: 4,
  completed: 5,
  expired: 6,
};

/**
 * A key's history from what is stored: the key's `created_at` (claimed), its charge's
 * `created_at` (reserved), each park a person ended (kept in their audit row) and the current
 * one (`failed_at`), the actions of the audit trail, `completed_at`, and for a tombstone the
 * reaper's last touch. A lease taken over, or a park that nobody ended before another, is not
 * recorded.
 */
export function keyHistory(details: KeyDetails, audit: readonly AuditEntry[]): KeyHistoryEvent[] {
  const events: KeyHistoryEvent[] = [{ at: details.createdAt, event: 'claimed', detail: null }];
  // A charge's intent, or a refund's or capture's reservation (made with the claim).
  const reserved = details.charge ?? details.movement;
  if (reserved) events.push({ at: reserved.createdAt, event: 'reserved', detail: null });
  for (const entry of audit) {
    if (entry.parkedAt) {
      events.push({ at: entry.parkedAt, event: 'parked', detail: entry.parkedReason });
    }
    const by = entry.actor === null ? '' : ` by ${entry.actor}`;
    events.push(
      entry.action === 'resolve'
        ? { at: entry.at, event: 'resolved', detail: `${entry.result}${by}` }
        : { at: entry.at, event: 'requeued', detail: `to ${entry.result}${by}` },
    );
  }
  if (details.recoveryPoint === 'failed') {
    // Until the key moves on, updated_at is when it was parked (keys parked before failed_at).
    const at = details.failedAt ?? details.updatedAt;
    events.push({ at, event: 'parked', detail: details.lastError });
  }
  if (details.completedAt) {
    events.push({
      at: details.completedAt,
      event: 'completed',
      detail: details.charge?.status ?? details.movement?.status ?? null,
    });
  }
  if (details.recoveryPoint === 'expired') {
    events.push({ at: details.updatedAt, event: 'expired', detail: null });
  }
  return events.sort(
    (a, b) => a.at.getTime() - b.at.getTime() || PHASE_ORDER[a.event] - PHASE_ORDER[b.event],
  );
}
