import type { ChaosPlan, PlannedCharge, PlannedMovement } from './createChaosPlan.js';
import type { KnownCharge, OperationSink } from './OperationSink.js';
import { runOperation, type ClientSettings } from './runOperation.js';
import { sendOperation } from './sendOperation.js';

/** What a process's clients run operations with. */
export type RunnerSettings = ClientSettings & {
  plan: ChaosPlan;
  concurrency: number;
  /**
   * The outcome of a charge settled before this run of operations (by a worker since killed,
   * or before the clients' return), for its refunds and captures; undefined when unknown.
   */
  known: (charge: number) => KnownCharge | undefined;
};

/** A charge (unless it settled earlier) and those of its refunds and captures to run. */
type Family = { parent: number; charge: PlannedCharge | null; waves: PlannedMovement[][] };

/**
 * Runs the operations of `indexes`, `concurrency` families at a time, each to its end. A family
 * is a charge and its refunds and captures: a movement can only be asked of a charge whose
 * outcome is known, so the charge runs first; then each wave of its movements is sent at once,
 * several keys racing on the one charge, the next wave once the last has ended. A movement of
 * a charge that did not succeed is skipped; one of a charge whose client walked away without
 * an outcome is deferred to the client's return (the caller runs it again then).
 */
export async function runOperations(
  settings: RunnerSettings,
  indexes: readonly number[],
  sink: OperationSink,
): Promise<void> {
  const families = familiesOf(settings.plan, indexes);
  let next = 0;
  const client = async () => {
    while (next < families.length && !settings.signal?.aborted) {
      await runFamily(settings, families[next++] as Family, sink);
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(settings.concurrency, families.length) }, client),
  );
}

async function runFamily(settings: RunnerSettings, family: Family, sink: OperationSink) {
  // A charge that settled before (a late visit, say) keeps the outcome its movements were for.
  let known = settings.known(family.parent);
  if (family.charge) {
    const end = await runOperation(settings, family.charge, sendOperation(family.charge), sink);
    if (end === null) return; // stopped: the movements stay pending with their charge
    if (!known && end.result === 'settled') {
      known = { status: end.status ?? 'cancelled', chargeId: end.chargeId ?? null };
    }
  }
  const movements = family.waves.flat();
  if (!known) {
    for (const m of movements) {
      sink.ended({ op: m.index, result: 'deferred', status: null, lastError: null });
    }
    return;
  }
  const chargeId = known.chargeId;
  if (known.status !== 'succeeded' || chargeId === null) {
    for (const m of movements) {
      sink.ended({ op: m.index, result: 'skipped', status: 'skipped', lastError: null });
    }
    return;
  }
  for (const wave of family.waves) {
    if (settings.signal?.aborted) return;
    await Promise.all(wave.map((m) => runOperation(settings, m, sendOperation(m, chargeId), sink)));
  }
}

/** The operations grouped by family, in the order of their first operation. */
function familiesOf(plan: ChaosPlan, indexes: readonly number[]): Family[] {
  const byParent = new Map<number, Family>();
  for (const index of indexes) {
    const parent = plan.familyOf(index);
    let family = byParent.get(parent);
    if (!family) byParent.set(parent, (family = { parent, charge: null, waves: [] }));
    const op = plan.operation(index);
    if (op.kind === 'charge') family.charge = op;
    else (family.waves[op.wave] ??= []).push(op);
  }
  // Waves no operation is left in are dropped; the others keep their order.
  for (const family of byParent.values()) family.waves = family.waves.filter(Boolean);
  return [...byParent.values()];
}
