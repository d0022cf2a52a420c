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
          catchLater(onEvent(event), complain);
        } catch (error) {
          complain(error);
        }
      }
      if (logger) {
        try {
          const { type, ...fields } = event;
          catchLater(
            logger[levelOf(event)]({ event: type, ...fields }, `chargeonce ${type}`),
            complain,
          );
        } catch (error) {
          complain(error);
        }
      }
    },
  };
}

/**
 * A handler or logger method that returned a promise (an async one, or a thenable of another
 * library's) must not turn its rejection into an unhandled rejection, which ends the process
 * under Node's defaults: it is caught, as a throw is.
 */
function catchLater(returned: unknown, complain: (error: unknown) => void): void {
  if (typeof returned !== 'object' && typeof returned !== 'function') return;
  if (returned === null || typeof (returned as { then?: unknown }).then !== 'function') return;
  Promise.resolve(returned as PromiseLike<unknown>).catch(complain);
}
