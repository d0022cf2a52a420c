import type { CaptureOutcome, RefundOutcome } from '../engine/movementTypes.js';
import type { ChargeOutcome } from '../engine/types.js';
import type { AdminActionRecord } from '../store/adminActionRecord.js';
import type { RecoveryPoint } from '../store/keyState.js';
import type { ChargeDetails, MovementDetails } from '../store/readKeyDetails.js';
import type { KeySummaryRow } from '../store/listKeysPage.js';

/** Which key an admin call is about. */
export type KeyTarget = {
  merchantId: string;
  key: string;
  /**
   * The key's operation.
   * @defaultValue the engine's `operation` (`'charge'`)
   */
  operation?: string;
};

/** One entry of the audit trail: what a person did to a key, who and why. */
export type AuditEntry = AdminActionRecord;

/** What happened to a key, by kind. */
export type KeyHistoryEventName =
  /** The key was claimed (its row written). */
  | 'claimed'
  /** The charge intent was written: money could move from here on. */
  | 'reserved'
  /** Parked in `failed` for a person (`detail`: why). */
  | 'parked'
  /** A person put it back for the sweeper (`detail`: by whom). */
  | 'requeued'
  /** A person resolved it (`detail`: the outcome and by whom). */
  | 'resolved'
  /** Its outcome was stored (`detail`: the charge's status). */
  | 'completed'
  /** The reaper dropped its stored response and left a tombstone. */
  | 'expired';

/** One step of a key's history, by PostgreSQL's clock. */
export type KeyHistoryEvent = { at: Date; event: KeyHistoryEventName; detail: string | null };

/** A key's lease: held while an attempt (or the sweeper) owns it. */
export type KeyLease = {
  held: boolean;
  /** Milliseconds left on it; 0 when not held. */
  remainingMs: number;
  /** When it ends (or ended); null when released. */
  until: Date | null;
};

/** Everything chargeonce knows about one key, as `inspect` returns it. */
export type KeyInspection = {
  merchantId: string;
  operation: string;
  key: string;
  recoveryPoint: RecoveryPoint;
  /**
   * The canonical request stored at claim time, parsed (for a charge: a `ChargeRequest`); null
   * for a tombstone, whose request was dropped, or a stored text that is not JSON.
   */
  request: Record<string, unknown> | null;
  /** The request's fingerprint (sha256 of the canonical text). */
  requestHash: string;
  /** Attempts so far, client retries and sweeps together (a requeue starts them again). */
  attempts: number;
  lease: KeyLease;
  /** Why the last attempt stopped short, or why the key was parked. */
  lastError: string | null;
  /** The local charge; null before the charge intent is written (`started`). */
  charge: (ChargeDetails & { id: string }) | null;
  /** The refund or capture a key of operation `refund` or `capture` guards; null otherwise. */
  movement: (MovementDetails & { id: string }) | null;
  /** The stored response, replayed byte for byte; null until the key completes, and for a tombstone. */
  outcome: { httpStatus: number; body: string } | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /** When the key was last parked in `failed`; null if never (or before schema version 4). */
  failedAt: Date | null;
  /** What happened to the key, oldest first. */
  history: KeyHistoryEvent[];
  /** What people did to it, oldest first. */
  audit: AuditEntry[];
};

/** What `list` returns for each key. */
export type KeySummary = Omit<KeySummaryRow, 'position'>;

/** Options of `list`. */
export type ListKeysOptions = {
  /** Only keys at this recovery point. */
  point?: RecoveryPoint;
  /** Only this merchant's keys. */
  merchantId?: string;
  /** Only keys of this operation. @defaultValue every operation */
  operation?: string;
  /** Only keys created at least this many milliseconds ago (by PostgreSQL's clock). */
  olderThan?: number;
  /** Keys per page: 1 to 1000. */
  limit: number;
  /** Where to go on: the `nextCursor` of the previous page, with the same filters. */
  cursor?: string | null;
};

/** One page of `list`. */
export type KeyPage = {
  keys: KeySummary[];
  /** Pass it as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
};

/** Who resolves a parked key and why: both stored in the audit trail. */
export type ResolvedBy = {
  /** Who resolves it (a name, an email, a ticket system's user). */
  actor: string;
  /** Why (what the provider said, a ticket). */
  reason: string;
};

/** How a person resolves a parked charge key, after checking with the provider. */
export type ChargeResolveInput = KeyTarget &
  ResolvedBy & {
    /**
     * `succeeded`: the provider charged (its `providerChargeId` is required). `declined`: the
     * provider declined (`providerChargeId` required, `declineCode` optional). `cancelled`: the
     * provider made no charge under the key.
     */
    outcome: 'succeeded' | 'declined' | 'cancelled';
    /** The provider's charge id: required for `succeeded` and `declined`, refused for `cancelled`. */
    providerChargeId?: string;
    /** The provider's decline code: for `declined` only. */
    declineCode?: string;
  };

/**
 * How a person resolves a parked refund key (`operation: 'refund'`), after checking with the
 * provider. The outcomes are a refund's own, as `processRefund` returns them.
 */
export type RefundResolveInput = KeyTarget &
  ResolvedBy & {
    operation: 'refund';
    /**
     * `succeeded`: the provider refunded (its `providerRefundId` is required). `failed`: the
     * provider refused the refund (`providerRefundId` required, `failureCode` optional).
     * `cancelled`: the provider made no refund under the key. The amount held on the charge is
     * refunded on `succeeded` and released otherwise.
     */
    outcome: 'succeeded' | 'failed' | 'cancelled';
    /** The provider's refund id: required for `succeeded` and `failed`, refused for `cancelled`. */
    providerRefundId?: string;
    /** The provider's failure code: for `failed` only. */
    failureCode?: string;
  };

/**
 * How a person resolves a parked capture key (`operation: 'capture'`), after checking with the
 * provider. `succeeded` records the amount the capture reserved as captured (the whole
 * authorization unless the request named less).
 */
export type CaptureResolveInput = KeyTarget &
  ResolvedBy & {
    operation: 'capture';
    /**
     * `succeeded`: the provider captured (its `providerCaptureId` is required). `failed`: the
     * provider refused the capture (`providerCaptureId` required, `failureCode` optional).
     * `cancelled`: the provider made no capture under the key; the authorization may be
     * captured again.
     */
    outcome: 'succeeded' | 'failed' | 'cancelled';
    /** The provider's capture id: required for `succeeded` and `failed`, refused for `cancelled`. */
    providerCaptureId?: string;
    /** The provider's failure code: for `failed` only. */
    failureCode?: string;
  };

/** How a person resolves a parked key: a charge's, a refund's or a capture's. */
export type ResolveInput = ChargeResolveInput | RefundResolveInput | CaptureResolveInput;

/**
 * What `resolve` did: the outcome now stored (and replayed to any retry of the key), of the
 * key's kind, and its audit entry.
 */
export type ResolveResult =
  | { kind: 'charge'; outcome: ChargeOutcome; audit: AuditEntry }
  | { kind: 'refund'; outcome: RefundOutcome; audit: AuditEntry }
  | { kind: 'capture'; outcome: CaptureOutcome; audit: AuditEntry };

/** Which parked key `requeue` puts back, and who and why (stored in the audit trail). */
export type RequeueTarget = KeyTarget & {
  /** Who requeued it (1 to 200 characters): an email, a username. */
  actor: string;
  /** Why (1 to 2,000 characters): what was checked, a ticket. */
  reason: string;
};
