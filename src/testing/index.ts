// chargeonce/testing: fake providers, the fault-injecting provider server, the chaos harness,
// the reconciler and the conformance kit. For tests and staging, never on the charge path.
export { createFakeProvider } from '../provider/createFakeProvider.js';
export type {
  FakeCaptureFault,
  FakeFault,
  FakeLedgerEntry,
  FakeProvider,
  FakeProviderMethod,
  FakeProviderOptions,
  FakeRefundFault,
} from '../provider/createFakeProvider.js';
export { MOVEMENT_FAILURE_CODES } from '../provider/createMovementBooks.js';
export type { FakeCaptureEntry, FakeRefundEntry } from '../provider/createMovementBooks.js';
export { startFakeProviderServer } from '../provider/fakeProviderServer.js';
export type {
  FakeProviderServer,
  FakeProviderServerOptions,
  FakeServerStats,
} from '../provider/fakeProviderServer.js';
export { FAKE_SERVER_FAULTS } from '../provider/createFaultSchedule.js';
export type {
  FakeServerFault,
  FakeServerRates,
  LatencyRange,
} from '../provider/createFaultSchedule.js';
export type { FakeServerLedgerEntry } from '../provider/createProviderLedger.js';
export { createHttpProvider, ProviderHttpError } from '../provider/createHttpProvider.js';
export type { HttpProvider, HttpProviderOptions } from '../provider/createHttpProvider.js';
export { reconcile } from '../chaos/reconcile.js';
export type {
  ObservedResponse,
  ProviderLedgerEntry,
  ReconcileOptions,
  ReconcileReport,
  Violation,
} from '../chaos/reconcile.js';
export type {
  MovementLedger,
  MovementViolation,
  ProviderMovementEntry,
} from '../chaos/reconcileMovements.js';
export { runChaos } from '../chaos/runChaos.js';
export { DEFAULT_PROVIDER_FAULTS } from '../chaos/resolveChaosOptions.js';
export type { ChaosOptions } from '../chaos/resolveChaosOptions.js';
export type {
  ChaosProgress,
  ChaosReport,
  UnexpectedError,
  UnsettledOperation,
} from '../chaos/ChaosReport.js';
export type { ChaosProviderFactory, ChaosProviderModule } from '../chaos/loadChaosProvider.js';
export { runConformance, renderConformanceReport } from '../conformance/runConformance.js';
export type {
  ConformanceCheck,
  ConformanceFixture,
  ConformanceOptions,
  ConformanceReport,
} from '../conformance/runConformance.js';
