export { createChargeEngine } from './engine/createChargeEngine.js';
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
export type { PoolInput } from './store/resolvePool.js';
export { validateChargeRequest, canonicalJson, deriveProviderKey } from './request.js';
export type { ChargeRequest, ValidatedRequest } from './request.js';
export {
  ChargeOnceError,
  ChargeRejectedError,
  IdempotencyKeyInUseError,
  IdempotencyKeyReusedError,
  InvalidConfigurationError,
  InvalidRequestError,
  ProviderError,
  ProviderUnavailableError,
  SchemaVersionError,
  SimulatedCrashError,
  StoreUnavailableError,
} from './errors.js';
export type { FieldIssue } from './errors.js';
export { ProviderTransientError } from './provider/PaymentProvider.js';
export type {
  CreateChargeInput,
  PaymentProvider,
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
