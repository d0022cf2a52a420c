import type { ChargeOnceErrorCode } from '../errors.js';
import type { SweepResult } from '../recovery/sweep.js';

/** Which key an event is about. The key is the caller's own value: events carry it as given. */
export type EventKey = { merchantId: string; operation: string; key: string };

/** Where an attempt found the key when it started: `new` for a key it created. */
export type StartingPoint = 'new' | 'started' | 'reserved';

/**
 * Everything the engine reports through `onEvent`, one union discriminated by `type`. Nothing a
 * request carried in `metadata` appears, nor any card data: ids, statuses, reasons and counts.
 */
export type ChargeOnceEvent =
  /** An attempt owns the key: a fresh claim, or a takeover of one whose lease ran out. */
  | (EventKey & { type: 'claimed'; chargeId: string; from: StartingPoint; attempt: number })
  /** A completed key answered with its stored outcome. */
  | (EventKey & { type: 'replayed'; chargeId: string; status: string; httpStatus: number })
  /**
   * Another attempt holds the key, and the caller was refused (409): at once, or, with
   * `inProgress: { waitMs }`, when its wait ran out.
   */
  | (EventKey & { type: 'conflict'; retryAfterMs: number })
  /**
   * With `inProgress: { waitMs }`: the caller met the key in progress and waits for its outcome,
   * `leftMs` more at most. A wait ends in the outcome (`replayed`, or the caller's own attempt
   * when the holder gave the key up) or, when it runs out, a `conflict`.
   */
  | (EventKey & { type: 'waiting'; leftMs: number })
  /** The key was used for a different request (422); the fields that differ, by name. */
  | (EventKey & { type: 'reused'; differingFields: readonly string[] })
  /** A charge the provider had made under the key was found and recorded instead of charging. */
  | (EventKey & {
      type: 'adopted';
      chargeId: string;
      providerChargeId: string;
      by: 'client' | 'sweeper';
    })
  /** The sweeper ended an abandoned key the provider never charged (stored 410). */
  | (EventKey & { type: 'cancelled'; chargeId: string })
  /** A key was parked in `failed` for a person, with why. */
  | (EventKey & { type: 'parked'; reason: string })
  /** A parked key went back to the sweeper. */
  | (EventKey & { type: 'requeued'; by: string | null })
  /** A person resolved a parked key. */
  | (EventKey & { type: 'resolved'; resolution: string; by: string })
  /** An attempt found its lease taken over and stopped without writing. */
  | (EventKey & { type: 'lease_lost'; chargeId: string })
  /** The provider failed; `transient` failures leave the key for a retry. */
  | (EventKey & {
      type: 'provider_failed';
      transient: boolean;
      reason: string;
      errorCode: ChargeOnceErrorCode;
    })
  /** One sweep pass ended. */
  | { type: 'swept'; result: SweepResult; durationMs: number }
  /** One reap pass ended. */
  | {
      type: 'reaped';
      reaped: number;
      durationMs: number;
      /**
       * The windows the pass kept keys and tombstones for: the longest any engine of the schema
       * recorded, this one's included (see Retention in the README).
       */
      retentionMs: number;
      tombstoneRetentionMs: number;
    };

/** The `type`s of {@link ChargeOnceEvent}. */
export type ChargeOnceEventType = ChargeOnceEvent['type'];
