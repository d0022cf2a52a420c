import type { CrashPoint, FaultInjector } from '../engine/types.js';
import type { ChargeOnceEvent } from '../observability/events.js';
import {
  declaredTraits,
  type PaymentProvider,
  type ProviderCharge,
} from '../provider/PaymentProvider.js';
import { deriveProviderKey } from '../request.js';

/** What one attempt brings to a shared engine, and hears back from it. */
export type AttemptRoute = {
  /** Its crash and stall points; unset for a healthy attempt. */
  faults?: FaultInjector | undefined;
  /** A provider lookup under its key found a charge (an adoption, if the outcome is that charge). */
  found?(charge: ProviderCharge): void;
  /** The engine reported an event about its key (a `conflict`, say). */
  event?(event: ChargeOnceEvent): void;
  /** A completion of its key sent a NOTIFY to waiters. */
  notified?(): void;
};

/** A key as the engine names it in its fault-injector calls and events. */
type KeyRef = { merchantId: string; key: string };

/**
 * Routes what one shared engine does to the attempts in flight in it, by key: its fault
 * injector, its provider's lookups and its events. Give the engine `faults`, `provider` and
 * `onEvent`, and run each attempt through {@link AttemptRouter.run}.
 */
export type AttemptRouter = {
  faults: FaultInjector;
  provider: PaymentProvider;
  onEvent: (event: ChargeOnceEvent) => void;
  /** Runs `attempt` with `route` registered for `scoped`'s key until it settles. */
  run<T>(scoped: KeyRef, route: AttemptRoute, attempt: () => Promise<T>): Promise<T>;
  /** Tells the attempts in flight for a key that its completion notified waiters. */
  notified(scoped: KeyRef): void;
};

const idOf = (scoped: KeyRef) => `${scoped.merchantId}\n${scoped.key}`;

/**
 * Creates the router of one engine over `provider`. The engine names the key in every
 * fault-injector call (`shouldCrash(point, scoped)`, `stall(point, scoped)`) and every event,
 * so those go to the attempts registered for that key. A lookup names only the provider key, an
 * opaque hash of the key and its charge id: the router learns it from the `claimed` event that
 * precedes every provider call of an attempt (a fresh claim or a takeover, with the charge id).
 *
 * Several attempts of one key may be in flight in one engine at once (the property test does
 * that; the chaos clients never do): a crash or stall point then fires in whichever of them
 * reaches it first, once, as each attempt's injector decides. Only the attempt holding the lease
 * gets past the claim, so that is the one that was to crash there, or the one that took its place.
 */
export function createAttemptRouter(provider: PaymentProvider): AttemptRouter {
  const routes = new Map<string, Set<AttemptRoute>>();
  // Provider key → key, for lookups; and key → its provider keys, to forget them with the key.
  const keyOfProviderKey = new Map<string, string>();
  const providerKeysOf = new Map<string, Set<string>>();

  const each = (id: string, visit: (route: AttemptRoute) => void) => {
    for (const route of routes.get(id) ?? []) visit(route);
  };
  const shouldCrash = (point: CrashPoint, scoped: KeyRef & { operation: string }): boolean => {
    for (const route of routes.get(idOf(scoped)) ?? []) {
      if (route.faults?.shouldCrash(point, scoped)) return true;
    }
    return false;
  };
  const stall = (point: CrashPoint, scoped: KeyRef & { operation: string }) => {
    for (const route of routes.get(idOf(scoped)) ?? []) {
      const stalled = route.faults?.stall?.(point, scoped);
      if (stalled) return stalled;
    }
    return undefined;
  };
  const learnProviderKey = (event: ChargeOnceEvent) => {
    if (event.type !== 'claimed') return;
    const id = idOf(event);
    if (!routes.has(id)) return;
    const providerKey = deriveProviderKey(
      event.merchantId,
      event.operation,
      event.key,
      event.chargeId,
    );
    keyOfProviderKey.set(providerKey, id);
    let known = providerKeysOf.get(id);
    if (!known) providerKeysOf.set(id, (known = new Set()));
    known.add(providerKey);
  };

  return {
    faults: { shouldCrash, stall },
    provider: {
      ...declaredTraits(provider),
      createCharge: (input, opts) => provider.createCharge(input, opts),
      findCharge: async (providerKey, opts) => {
        const charge = await provider.findCharge(providerKey, opts);
        const id = keyOfProviderKey.get(providerKey);
        if (charge && id !== undefined) each(id, (route) => route.found?.(charge));
        return charge;
      },
    },
    onEvent: (event) => {
      if (!('key' in event)) return;
      learnProviderKey(event);
      each(idOf(event), (route) => route.event?.(event));
    },
    async run(scoped, route, attempt) {
      const id = idOf(scoped);
      let registered = routes.get(id);
      if (!registered) routes.set(id, (registered = new Set()));
      registered.add(route);
      try {
        return await attempt();
      } finally {
        registered.delete(route);
        if (registered.size === 0) {
          routes.delete(id);
          for (const providerKey of providerKeysOf.get(id) ?? []) {
            keyOfProviderKey.delete(providerKey);
          }
          providerKeysOf.delete(id);
        }
      }
    },
    notified: (scoped) => each(idOf(scoped), (route) => route.notified?.()),
  };
}
