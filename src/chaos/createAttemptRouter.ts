import type { CrashPoint, FaultInjector } from '../engine/types.js';
import type { ChargeOnceEvent } from '../observability/events.js';
import { declaredTraits, type PaymentProvider } from '../provider/PaymentProvider.js';
import { deriveProviderKey } from '../request.js';

/** What a provider lookup found: a charge, a refund or a capture, by the provider's id. */
export type FoundAtProvider = { id: string };

/** What one attempt brings to a shared engine, and hears back from it. */
export type AttemptRoute = {
  /** Its crash and stall points; unset for a healthy attempt. */
  faults?: FaultInjector | undefined;
  /**
   * A provider lookup under its key found a charge, refund or capture (an adoption, if the
   * outcome is that one).
   */
  found?(answer: FoundAtProvider): void;
  /** The engine reported an event about its key (a `conflict`, say). */
  event?(event: ChargeOnceEvent): void;
  /** A completion of its key sent a NOTIFY to waiters. */
  notified?(): void;
  /**
   * Its claim's transaction reached the `reserve` hook (of an engine made to hold claims): the
   * hook waits for the promise returned, if any, with the key uncommitted.
   */
  hold?(): Promise<void> | undefined;
};

/** A key as the engine names it in its fault-injector calls and events. */
export type KeyRef = { merchantId: string; key: string };

/**
 * Routes what one shared engine does to the attempts in flight in it, by key: its fault
 * injector, its provider's lookups (of charges, refunds and captures) and its events. Give the
 * engine `faults`, `provider` and `onEvent`, and run each attempt through {@link AttemptRouter.run}.
 */
export type AttemptRouter = {
  faults: FaultInjector;
  provider: PaymentProvider;
  onEvent: (event: ChargeOnceEvent) => void;
  /** Runs `attempt` with `route` registered for `scoped`'s key until it settles. */
  run<T>(scoped: KeyRef, route: AttemptRoute, attempt: () => Promise<T>): Promise<T>;
  /** Tells the attempts in flight for a key that its completion notified waiters. */
  notified(scoped: KeyRef): void;
  /** The `reserve` hook of an engine that holds claims: waits as the key's attempt says. */
  hold(scoped: KeyRef): Promise<void>;
};

const idOf = (scoped: KeyRef) => `${scoped.merchantId}\n${scoped.key}`;

/**
 * Creates the router of one engine over `provider`. The engine names the key in every
 * fault-injector call (`shouldCrash(point, scoped)`, `stall(point, scoped)`) and every event,
 * so those go to the attempts registered for that key. A lookup names only the provider key, an
 * opaque hash of the key and its charge (or refund, or capture) id: the router learns it from
 * the `claimed` event that precedes every provider call of an attempt (a fresh claim or a
 * takeover, with that id).
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
    provider: routedProvider(provider, (providerKey, answer) => {
      const id = keyOfProviderKey.get(providerKey);
      if (answer && id !== undefined) each(id, (route) => route.found?.(answer));
    }),
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
    hold: async (scoped) => {
      for (const route of routes.get(idOf(scoped)) ?? []) {
        const held = route.hold?.();
        if (held) return held;
      }
    },
  };
}

/**
 * `provider`, with what its lookups find told to `found`. Refunds and captures are passed on
 * only when the provider has them: an engine on a provider without them must refuse movements
 * as it would without the router.
 */
function routedProvider(
  provider: PaymentProvider,
  found: (providerKey: string, answer: FoundAtProvider | null) => void,
): PaymentProvider {
  const routed: PaymentProvider = {
    ...declaredTraits(provider),
    createCharge: (input, opts) => provider.createCharge(input, opts),
    findCharge: async (providerKey, opts) => {
      const charge = await provider.findCharge(providerKey, opts);
      found(providerKey, charge);
      return charge;
    },
  };
  if (refunds(provider)) {
    routed.createRefund = (input, opts) => provider.createRefund(input, opts);
    routed.findRefund = async (providerKey, opts) => {
      const refund = await provider.findRefund(providerKey, opts);
      found(providerKey, refund);
      return refund;
    };
  }
  if (captures(provider)) {
    routed.capture = (input, opts) => provider.capture(input, opts);
    routed.findCapture = async (input, opts) => {
      const captured = await provider.findCapture(input, opts);
      found(input.providerKey, captured);
      return captured;
    };
  }
  return routed;
}

function refunds(
  provider: PaymentProvider,
): provider is PaymentProvider & Required<Pick<PaymentProvider, 'createRefund' | 'findRefund'>> {
  return typeof provider.createRefund === 'function' && typeof provider.findRefund === 'function';
}

function captures(
  provider: PaymentProvider,
): provider is PaymentProvider & Required<Pick<PaymentProvider, 'capture' | 'findCapture'>> {
  return typeof provider.capture === 'function' && typeof provider.findCapture === 'function';
}
