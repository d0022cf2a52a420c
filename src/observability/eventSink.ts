import type { ChargeOnceEvent } from './events.js';

/**
 * What the `logger` option takes: any pino-compatible logger (pino itself, or a child of it).
 * Each method is called as pino's are, with an object of fields first and a message.
 */
export type EventLogger = {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
};

/** Where the engine sends its events; `enabled` is false when nobody listens. */
export type EventSink = {
  readonly enabled: boolean;
  emit(event: ChargeOnceEvent): void;
};

type Level = keyof EventLogger;

/**
 * The level an event is logged at: what needs a person (`parked`) is an error; what says a
 * client or a component misbehaves (`reused`, `lease_lost`, `provider_failed`) a warning; what
 * recovery did, info; the everyday path (claims, replays, 409s, waits), debug.
 */
export function levelOf(event: ChargeOnceEvent): Level {
  switch (event.type) {
    case 'parked':
      return 'error';
    case 'reused':
    case 'lease_lost':
    case 'provider_failed':
      return 'warn';
    case 'adopted':
    case 'cancelled':
    case 'requeued':
    case 'resolved':
      return 'info';
    case 'swept':
      return event.result.examined > 0 ? 'info' : 'debug';
    case 'reaped':
      return event.reaped > 0 ? 'info' : 'debug';
    case 'claimed':
    case 'replayed':
    case 'conflict':
    case 'waiting':
      return 'debug';
  }
}

const NOBODY_LISTENS: EventSink = { enabled: false, emit: () => {} };

/**
 * One sink for the `onEvent` callback and the logger. Neither can break a charge: whatever they
 * throw is caught and written to `console.error` once per sink, so a broken logger is seen
 * without flooding the output.
 */
export function createEventSink(options: {
  onEvent?: ((event: ChargeOnceEvent) => void) | undefined;
  logger?: EventLogger | undefined;
}): EventSink {
  const { onEvent, logger } = options;
  if (!onEvent && !logger) return NOBODY_LISTENS;
  let complained = false;
  const complain = (error: unknown) => {
    if (complained) return;
    complained = true;
    console.error('chargeonce: an onEvent handler or logger threw; events go on', error);
  };
  return {
    enabled: true,
    emit(event) {
      if (onEvent) {
        try {
          // A handler that returns a rejected promise must not become an unhandled rejection.
          const returned: unknown = onEvent(event);
          if (returned instanceof Promise) returned.catch(complain);
        } catch (error) {
          complain(error);
        }
      }
      if (logger) {
        try {
          const { type, ...fields } = event;
          logger[levelOf(event)]({ event: type, ...fields }, `chargeonce ${type}`);
        } catch (error) {
          complain(error);
        }
      }
    },
  };
}
