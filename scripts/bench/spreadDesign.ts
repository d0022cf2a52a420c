import type { Design, DesignName } from './Design.js';

/**
 * Several instances of one design as one, each call going to the next in turn: several
 * processes behind a load balancer. Callers of one key then meet in different engines, so a
 * caller that finds the key in progress waits on another engine's commit (LISTEN/NOTIFY), not
 * only on an attempt of its own engine's.
 */
export function spreadDesign(name: DesignName, instances: readonly Design[]): Design {
  let next = 0;
  return {
    name,
    instances: instances.length,
    charge(key, request) {
      const instance = instances[next] as Design;
      next = (next + 1) % instances.length;
      return instance.charge(key, request);
    },
    end: async () => {
      await Promise.allSettled(instances.map((instance) => instance.end()));
    },
  };
}
