export { createChargeEngine } from './engine/createChargeEngine.js';
export { CRASH_POINTS } from './engine/types.js';
export type { ChargeEngine } from './engine/createChargeEngine.js';
export type {
  ChargeEngineOptions,
  ChargeHooks,
  ChargeOutcome,
  ChargeStatus,
  CompleteHookContext,
  CrashPoint,
  FaultInjector,
  HookContext,
  InProgressPolicy,
} from './engine/types.js';
export { migrate } from './store/migrate.js';
export type { MigrateOptions, MigrateResult } from './store/migrate.js';
export { createEnginePool } from './store/resolvePool.js';
export { resultParserInterceptor } from './store/resultParserInterceptor.js';
export type { PoolInput } from './store/resolvePool.js';
export { validateChargeRequest, canonicalJson, deriveProviderKey } from './request.js';
export type { ChargeRequest, ValidatedRequest } from './request.js';
export {
  CHARGE_ONCE_ERROR_CODES,
  ChargeNeedsAttentionError,
  ChargeOnceError,
  ChargeRejectedError,
  IdempotencyKeyExpiredError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  InvalidRequestError,
  ProviderAnswerInvalidError,
  ProviderError,
  ProviderUnavailableError,
  SchemaNotMigratedError,
  SchemaVersionError,
  SimulatedCrashError,
  StoreUnavailableError,
} from './errors.js';
export type { ChargeOnceErrorCode, FieldIssue } from './errors.js';
export { ProviderTransientError } from './provider/PaymentProvider.js';
export type {
  CreateChargeInput,
  PaymentProvider,
  FindChargeOptions,
  ProviderCallOptions,
  ProviderCharge,
} from './provider/PaymentProvider.js';
export { createFakeProvider } from './provider/createFakeProvider.js';
export type {
  FakeFault,
  FakeLedgerEntry,
  FakeProvider,
  FakeProviderOptions,
} from './provider/createFakeProvider.js';
export type { SweepOptions, SweepResult } from './recovery/sweep.js';
export type { ReapOptions } from './recovery/reap.js';
export type { RecoveryLoopOptions } from './recovery/startRecovery.js';
export type { StuckKey } from './store/listFailedKeys.js';
export type { KeyStatus } from './store/readKeyStatus.js';
export { startFakeProviderServer } from './provider/fakeProviderServer.js';
export type {
  FakeProviderServer,
  FakeProviderServerOptions,
  FakeServerStats,
} from './provider/fakeProviderServer.js';
export { FAKE_SERVER_FAULTS } from './provider/createFaultSchedule.js';
export type {
  FakeServerFault,
  FakeServerRates,
  LatencyRange,
} from './provider/createFaultSchedule.js';
export type { FakeServerLedgerEntry } from './provider/createProviderLedger.js';
export { createHttpProvider, ProviderHttpError } from './provider/createHttpProvider.js';
export type { HttpProviderOptions } from './provider/createHttpProvider.js';
export { createChargeHandler } from './http/createChargeHandler.js';
export type { ChargeHandler, ChargeHandlerOptions } from './http/createChargeHandler.js';
export type { ChargeRequestBody } from './http/parseChargeBody.js';
export { createChargeClient } from './client/createChargeClient.js';
export type {
  ChargeClient,
  ChargeClientOptions,
  ChargeOptions,
  ChargeResult,
} from './client/createChargeClient.js';
export { ChargeClientError } from './client/ChargeClientError.js';
export type { ChargeClientErrorCode, ChargeClientResponse } from './client/ChargeClientError.js';
export { reconcile } from './chaos/reconcile.js';
export type {
  ObservedResponse,
  ProviderLedgerEntry,
  ReconcileOptions,
  ReconcileReport,
  Violation,
} from './chaos/reconcile.js';
export { runChaos } from './chaos/runChaos.js';
export { DEFAULT_PROVIDER_FAULTS } from './chaos/resolveChaosOptions.js';
export type { ChaosOptions } from './chaos/resolveChaosOptions.js';
export type {
  ChaosProgress,
  ChaosReport,
  UnexpectedError,
  UnsettledOperation,
} from './chaos/ChaosReport.js';
export type { ChaosProviderFactory, ChaosProviderModule } from './chaos/loadChaosProvider.js';
