import type { DatabasePool } from 'slonik';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import type { Observer } from '../observability/observer.js';
import type { StorePools } from '../store/resolvePool.js';
import type { Tables } from '../store/tables.js';
import type { ChargeHooks, FaultInjector, InProgressPolicy, MonotonicClock } from './types.js';

/** Everything an attempt needs, resolved once by `createChargeEngine`. */
export type EngineEnv = {
  /** slonik, chargeonce's SQL layer, on the caller's pool. */
  pool: () => Promise<DatabasePool>;
  /** Both ways to the database: slonik, and node-postgres for the hot statements when it can. */
  pools: () => Promise<StorePools>;
  /**
   * What `pools()` resolves to, once it has (null before, and once the engine is closed): the hot
   * path reads it without awaiting a promise that is long settled.
   */
  readyPools: StorePools | null;
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
  /** Where events, spans and metrics go (silent until the engine's observer is ready). */
  observer: Observer;
  /**
   * The phase spans' `db.namespace`: the schema qualified by the database name
   * (`payments.chargeonce`), once the pools are resolved and when the pool's settings name it.
   */
  dbNamespace: string | null;
};
