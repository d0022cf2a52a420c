import { randomUUID } from 'node:crypto';
import type { ValidatedRequest } from '../request.js';
import type { ScopedKey } from '../store/keyState.js';
import { chargePhase, crashPoint, stallPoint } from './chargePhase.js';
import { claimPhase, type OwnedKey } from './claimPhase.js';
import type { EngineEnv } from './engineEnv.js';
import { reservePhase } from './reservePhase.js';
import type { ChargeOutcome } from './types.js';

/** What one attempt came to: an outcome, or a lost race that calls for a fresh look. */
export type AttemptResult = { kind: 'outcome'; outcome: ChargeOutcome } | { kind: 'lostRace' };

/** What a phase hands to the next: a recovery point committed, or the final outcome. */
type PhaseResult =
  { kind: 'recoveryPoint'; point: 'reserved' } | { kind: 'response'; outcome: ChargeOutcome };

/**
 * One attempt at a charge: claim (or replay, refuse, take over), then run the phases from the
 * recovery point the key is at, each committed with its work.
 */
export async function runAttempt(env: EngineEnv, v: ValidatedRequest): Promise<AttemptResult> {
  const scoped: ScopedKey = {
    merchantId: v.request.merchantId,
    operation: env.operation,
    key: v.key,
  };
  // A new token per attempt: it fences every write, so an attempt whose lease was taken over
  // cannot write again.
  const lockToken = randomUUID();
  const claim = await claimPhase(env, v, scoped, lockToken);
  switch (claim.kind) {
    case 'lostRace':
      return { kind: 'lostRace' };
    case 'response':
      return { kind: 'outcome', outcome: claim.outcome };
    case 'owned':
      if (claim.fresh) {
        crashPoint(env, 'afterClaimCommit', scoped);
        // Without `separateClaim` the intent committed with the claim.
        if (claim.owned.point === 'reserved') crashPoint(env, 'afterReserveCommit', scoped);
      }
      // A claim (or takeover) whose COMMIT was acknowledged late: the lease ran meanwhile.
      await stallPoint(env, 'afterClaimCommit', scoped);
      return { kind: 'outcome', outcome: await runPhases(env, v, scoped, lockToken, claim.owned) };
  }
}

async function runPhases(
  env: EngineEnv,
  v: ValidatedRequest,
  scoped: ScopedKey,
  lockToken: string,
  owned: OwnedKey,
): Promise<ChargeOutcome> {
  const charge = {
    scoped,
    lockToken,
    chargeId: owned.chargeId,
    providerKey: owned.providerKey,
    request: v.request,
    lease: owned.lease,
    reservation: owned.reservation,
  };
  let point = owned.point;
  let providerMayHaveCharged = owned.providerMayHaveCharged;
  for (;;) {
    const result: PhaseResult =
      point === 'started'
        ? await runStarted(env, charge)
        : {
            kind: 'response',
            outcome: (await chargePhase(env, { ...charge, providerMayHaveCharged })).outcome,
          };
    switch (result.kind) {
      case 'response':
        return result.outcome;
      case 'recoveryPoint':
        point = result.point;
        // The intent was just written by this attempt: nobody called the provider before it.
        providerMayHaveCharged = false;
        crashPoint(env, 'afterReserveCommit', scoped);
        break;
      default:
        return assertNever(result);
    }
  }
}

async function runStarted(
  env: EngineEnv,
  charge: Parameters<typeof reservePhase>[1],
): Promise<PhaseResult> {
  const rejected = await reservePhase(env, charge);
  return rejected
    ? { kind: 'response', outcome: rejected }
    : { kind: 'recoveryPoint', point: 'reserved' };
}

function assertNever(value: never): never {
  throw new Error(`Unexpected phase result: ${JSON.stringify(value)}`);
}
