import { oneLine } from './adminRender.js';
import { MOVEMENT_KINDS } from '../store/movementStore.js';
import { UsageError } from './parseCommandArgs.js';
import { createChargeEngine } from '../engine/createChargeEngine.js';
import type { PaymentProvider } from '../provider/PaymentProvider.js';
import { addSweepResult, emptySweepResult } from '../recovery/sweep.js';
import { loadProvider } from './loadProvider.js';

/** Options shared by `sweep`, `reap`, `status` and `requeue`. */
export type RecoveryCommandOptions = {
  databaseUrl: string;
  schema?: string;
  /** sweep, requeue: the operation whose keys it takes (the engine's default: `charge`). */
  operation?: string;
  limit?: number;
  providerModule?: string;
  onAbandoned?: 'cancel' | 'complete';
  graceMs?: number;
  maxAttempts?: number;
  retentionMs?: number;
  tombstoneRetentionMs?: number;
  json: boolean;
};

type Print = (line: string) => void;

/** A provider for commands that never call one (reap, status). */
const noProvider: PaymentProvider = {
  createCharge: () => Promise.reject(new Error('this command does not charge')),
  findCharge: () => Promise.reject(new Error('this command does not look charges up')),
};

/** `chargeonce sweep`: sweeps until no abandoned key is left (or `limit` keys were taken). */
export async function sweepCommand(options: RecoveryCommandOptions, print: Print): Promise<void> {
  if (!options.providerModule) {
    throw new UsageError(
      'sweep needs --provider <module>: the adapter it asks about abandoned charges',
      undefined,
    );
  }
  const { provider, hooks } = await loadProvider(options.providerModule);
  const engine = createChargeEngine({
    pool: options.databaseUrl,
    provider,
    ...(hooks ? { hooks } : {}),
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.operation ? { operation: options.operation } : {}),
    ...(options.onAbandoned ? { onAbandoned: options.onAbandoned } : {}),
    ...(options.graceMs === undefined ? {} : { sweepGraceMs: options.graceMs }),
    ...(options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts }),
  });
  try {
    const budget = options.limit ?? Number.POSITIVE_INFINITY;
    const total = emptySweepResult();
    while (total.examined < budget) {
      const pass = await engine.sweep({ limit: Math.min(100, budget - total.examined) });
      addSweepResult(total, pass);
      // Stop when nothing is left, or when a pass only skipped (the provider is down).
      if (pass.examined === 0 || pass.skipped === pass.examined) break;
    }
    if (options.json) print(JSON.stringify(total));
    else
      print(
        Object.entries(total)
          .map(([k, v]) => `${k}: ${v}`)
          .join('  '),
      );
  } finally {
    await engine.close();
  }
}

/** `chargeonce reap`: reaps completed keys past retention to tombstones, purges old tombstones. */
export async function reapCommand(options: RecoveryCommandOptions, print: Print): Promise<void> {
  let passed: { retentionMs: number; tombstoneRetentionMs: number } | undefined;
  const engine = createChargeEngine({
    onEvent: (event) => {
      if (event.type === 'reaped') {
        const { retentionMs, tombstoneRetentionMs } = event;
        passed = { retentionMs, tombstoneRetentionMs };
      }
    },
    pool: options.databaseUrl,
    provider: noProvider,
    ...(options.schema ? { schema: options.schema } : {}),
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    ...(options.tombstoneRetentionMs === undefined
      ? {}
      : { tombstoneRetentionMs: options.tombstoneRetentionMs }),
  });
  try {
    const reaped = await engine.reap({ limit: options.limit ?? Number.MAX_SAFE_INTEGER });
    // The windows the pass kept keys for: the longest any engine of the schema recorded, which
    // a shorter --retention-ms does not lower (a reap of nothing says why).
    const windows = passed ?? { retentionMs: 0, tombstoneRetentionMs: 0 };
    if (options.json) print(JSON.stringify({ reaped, ...windows }));
    else {
      print(
        `reaped to tombstones: ${reaped} (completed keys kept ${durationText(windows.retentionMs)}, ` +
          `tombstones ${durationText(windows.tombstoneRetentionMs)}: the longest windows ` +
          'recorded in retention_windows)',
      );
    }
  } finally {
    await engine.close();
  }
}

/** A whole number of the largest unit that fits: `72 h`, `30 d`, `1500 ms`. */
function durationText(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${name}`;
  }
  return `${ms} ms`;
}

/** `chargeonce status`: keys per recovery point, abandoned and stuck keys, oldest unfinished. */
export async function statusCommand(options: RecoveryCommandOptions, print: Print): Promise<void> {
  const engine = createChargeEngine({
    pool: options.databaseUrl,
    provider: noProvider,
    ...(options.schema ? { schema: options.schema } : {}),
  });
  try {
    const status = await engine.status();
    const stuck = await engine.listStuck({ limit: options.limit ?? 20 });
    if (options.json) {
      print(JSON.stringify({ ...status, stuck }));
      return;
    }
    const points = status.byRecoveryPoint;
    print(
      `started: ${points.started}  reserved: ${points.reserved}  completed: ${points.completed}  failed: ${points.failed}  expired: ${points.expired}`,
    );
    print(`abandoned (no lease held): ${status.abandoned}`);
    print(
      `oldest unfinished: ${status.oldestUnfinishedMs === null ? 'none' : `${Math.round(status.oldestUnfinishedMs / 1000)} s`}`,
    );
    for (const key of stuck) {
      // A refund's or capture's key guards that movement: its id is the movement's, not a charge's.
      const guarded = (MOVEMENT_KINDS as readonly string[]).includes(key.operation)
        ? key.operation
        : 'charge';
      // One line per key: a reason may quote a provider's or a hook's message, newlines and all.
      print(
        `stuck: ${key.merchantId} ${key.operation} ${key.key} (${guarded} ${key.chargeId}, ${key.attempts} attempt${key.attempts === 1 ? '' : 's'}): ${oneLine(key.reason)}`,
      );
    }
  } finally {
    await engine.close();
  }
}
