import type { DatabasePool } from 'slonik';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import type { Tables } from '../store/tables.js';
import type { ChargeHooks, FaultInjector, InProgressPolicy, MonotonicClock } from './types.js';

/** Everything an attempt needs, resolved once by `createChargeEngine`. */
export type EngineEnv = {
  pool: () => Promise<DatabasePool>;
  tables: Tables;
  provider: PaymentProvider;
  operation: string;
  leaseMs: number;
  providerTimeoutMs: number;
  leaseMarginMs: number;
  retentionMs: number;
  tombstoneRetentionMs: number;
  clock: MonotonicClock;
  inProgress: InProgressPolicy;
  hooks: ChargeHooks;
  faults: FaultInjector | undefined;
  separateClaim: boolean;
};
