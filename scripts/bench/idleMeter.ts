/**
 * An OpenTelemetry meter whose instruments do nothing: an engine given it does all of its own
 * telemetry bookkeeping (the call's trace, its steps, the counters summed in process) and hands
 * the SDK nothing. What is left, against an engine with `telemetry: false`, is chargeonce's part.
 */
export const idleMeter = {
  createCounter: () => ({ add() {} }),
  createHistogram: () => ({ record() {} }),
  createObservableGauge: () => ({ addCallback() {}, removeCallback() {} }),
  addBatchObservableCallback() {},
  removeBatchObservableCallback() {},
};
