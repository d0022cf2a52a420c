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
export type {
  CaptureOutcome,
  CaptureRequest,
  MovementCompleteHookContext,
  MovementHookContext,
  MovementHooks,
  MovementRefusal,
  MovementStatus,
  RefundOutcome,
  RefundRequest,
} from './engine/movementTypes.js';
export { migrate } from './store/migrate.js';
export type { MigrateOptions, MigrateResult } from './store/migrate.js';
export { createEnginePool } from './store/resolvePool.js';
export type { EnginePoolOptions, PoolInput, SlonikPoolLike } from './store/resolvePool.js';
export type {
  EnginePool,
  PgClientLike,
  PgPoolLike,
  PgQueryConfig,
  PgQueryResult,
} from './store/pgPoolLike.js';
export type { HookQueryResult, HookStatement, HookTransaction } from './engine/hookTransaction.js';
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
  CaptureInput,
  CreateChargeInput,
  CreateRefundInput,
  FindCaptureInput,
  PaymentProvider,
  ProviderCapture,
  ProviderRefund,
  FindChargeOptions,
  ProviderCallOptions,
  ProviderCharge,
} from './provider/PaymentProvider.js';
export type { SweepOptions, SweepResult } from './recovery/sweep.js';
export type { ReapOptions } from './recovery/reap.js';
export type { RecoveryLoopOptions } from './recovery/startRecovery.js';
export type { StuckKey } from './store/listFailedKeys.js';
export type { KeyStatus } from './store/readKeyStatus.js';
export { KeyNotResolvableError } from './admin/KeyNotResolvableError.js';
export type { NotResolvableReason } from './admin/KeyNotResolvableError.js';
export type {
  AuditEntry,
  CaptureResolveInput,
  ChargeResolveInput,
  KeyHistoryEvent,
  KeyHistoryEventName,
  KeyInspection,
  KeyLease,
  KeyPage,
  KeySummary,
  KeyTarget,
  ListKeysOptions,
  RefundResolveInput,
  RequeueTarget,
  ResolvedBy,
  ResolveInput,
  ResolveResult,
} from './admin/types.js';
export type { RecoveryPoint } from './store/keyState.js';
export type { ChargeDetails, ChargeTotals, MovementDetails } from './store/readKeyDetails.js';
export type {
  ChargeOnceEvent,
  ChargeOnceEventType,
  EventKey,
  StartingPoint,
} from './observability/events.js';
export type { EventLogger } from './observability/eventSink.js';
export type { TelemetryOptions } from './observability/observer.js';
