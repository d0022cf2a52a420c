/** A monotonic clock the test moves forward, together with the leases it expires in SQL. */
export function aManualClock() {
  let offset = 0;
  return {
    now: () => performance.now() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}
