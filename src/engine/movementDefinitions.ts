import { z } from 'zod';
import { InvalidConfigurationError } from '../errors.js';
import type { PaymentProvider, ProviderCallOptions } from '../provider/PaymentProvider.js';
import type { FindChargeOptions } from '../provider/PaymentProvider.js';
import type { HeldMovement, MovementKind } from '../store/movementStore.js';
import type { MovementStatus } from './movementTypes.js';

/** A movement this attempt holds, as the provider calls need it. */
export type MovementContext = {
  merchantId: string;
  movementId: string;
  chargeId: string;
  providerKey: string;
  reason: string | null;
  held: HeldMovement & { amountMinor: number; currency: string; providerChargeId: string };
};

/** What the provider did, checked. */
export type ProviderMovement = {
  id: string;
  status: 'succeeded' | 'failed';
  amountMinor: number;
  failureCode: string | null;
};

/** The result stored for a movement: what its body and outcome are built from. */
export type MovementResult = {
  status: MovementStatus;
  providerMovementId: string | null;
  failureCode: string | null;
  refusal: string | null;
  amountMinor: number | null;
  currency: string | null;
};

/**
 * What one kind of movement brings to the shared phase machine (claim → reserve → provider →
 * complete): its provider calls, the check of their answers, and its response body. Everything
 * else (the claim and its reservation, leases, fencing, crash points, the sweeper) is common.
 */
export type MovementDefinition = {
  kind: MovementKind;
  /** @throws {InvalidConfigurationError} when the provider cannot do this kind of movement. */
  requireProvider(provider: PaymentProvider): void;
  create(
    provider: PaymentProvider,
    ctx: MovementContext,
    opts: ProviderCallOptions,
  ): Promise<unknown>;
  find(provider: PaymentProvider, ctx: MovementContext, opts: FindChargeOptions): Promise<unknown>;
  body(
    ids: { movementId: string; chargeId: string },
    result: MovementResult,
    reason: string | null,
  ): string;
};

/** The HTTP status of each way a movement ends. */
export const MOVEMENT_HTTP_STATUS: Record<MovementStatus, number> = {
  succeeded: 201,
  failed: 402,
  refused: 422,
  cancelled: 410,
};

const answerSchema = z.object({
  id: z.string().min(1).max(255),
  status: z.enum(['succeeded', 'failed']),
  amountMinor: z.number().int().positive(),
  currency: z.string(),
  failureCode: z.string().max(255).optional(),
});

/**
 * Checks a provider's refund or capture against the port's type and against what was reserved:
 * one for another amount or currency never completes as a success.
 */
export function checkMovementAnswer(
  answer: unknown,
  held: { amountMinor: number; currency: string },
): { ok: true; movement: ProviderMovement } | { ok: false; reason: string } {
  const parsed = answerSchema.safeParse(answer);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || 'answer'}: ${issue.message}`)
      .join('; ');
    return { ok: false, reason: `malformed provider answer (${issues})` };
  }
  const found = parsed.data;
  if (found.amountMinor !== held.amountMinor || found.currency !== held.currency) {
    return {
      ok: false,
      reason: `provider answer ${found.id} is for ${found.amountMinor} ${found.currency}, the reservation for ${held.amountMinor} ${held.currency}`,
    };
  }
  return {
    ok: true,
    movement: {
      id: found.id,
      status: found.status,
      amountMinor: found.amountMinor,
      failureCode: found.failureCode ?? null,
    },
  };
}

/** The body's fields common to both kinds, in a fixed order (the body is replayed as text). */
function movementBody(
  object: MovementKind,
  providerIdField: string,
  ids: { movementId: string; chargeId: string },
  result: MovementResult,
  extra: Record<string, unknown>,
): string {
  return JSON.stringify({
    id: ids.movementId,
    object,
    chargeId: ids.chargeId,
    status: result.status,
    amountMinor: result.amountMinor,
    currency: result.currency,
    ...extra,
    [providerIdField]: result.providerMovementId,
    ...(result.failureCode === null ? {} : { failureCode: result.failureCode }),
    ...(result.refusal === null ? {} : { refusal: result.refusal }),
  });
}

export const REFUND: MovementDefinition = {
  kind: 'refund',
  requireProvider(provider) {
    if (typeof provider.createRefund !== 'function' || typeof provider.findRefund !== 'function') {
      throw new InvalidConfigurationError(
        'processRefund needs a provider with createRefund and findRefund',
      );
    }
  },
  create: (provider, ctx, opts) =>
    (provider.createRefund as NonNullable<PaymentProvider['createRefund']>)(
      {
        providerKey: ctx.providerKey,
        merchantId: ctx.merchantId,
        refundId: ctx.movementId,
        chargeId: ctx.chargeId,
        providerChargeId: ctx.held.providerChargeId,
        amountMinor: ctx.held.amountMinor,
        currency: ctx.held.currency,
        ...(ctx.reason === null ? {} : { reason: ctx.reason }),
      },
      opts,
    ),
  find: (provider, ctx, opts) =>
    (provider.findRefund as NonNullable<PaymentProvider['findRefund']>)(ctx.providerKey, opts),
  body: (ids, result, reason) =>
    movementBody('refund', 'providerRefundId', ids, result, reason === null ? {} : { reason }),
};

export const CAPTURE: MovementDefinition = {
  kind: 'capture',
  requireProvider(provider) {
    if (typeof provider.capture !== 'function' || typeof provider.findCapture !== 'function') {
      throw new InvalidConfigurationError(
        'processCapture needs a provider with capture and findCapture',
      );
    }
  },
  create: (provider, ctx, opts) =>
    (provider.capture as NonNullable<PaymentProvider['capture']>)(
      {
        providerKey: ctx.providerKey,
        merchantId: ctx.merchantId,
        captureId: ctx.movementId,
        chargeId: ctx.chargeId,
        providerChargeId: ctx.held.providerChargeId,
        amountMinor: ctx.held.amountMinor,
        currency: ctx.held.currency,
      },
      opts,
    ),
  find: (provider, ctx, opts) =>
    (provider.findCapture as NonNullable<PaymentProvider['findCapture']>)(
      { providerKey: ctx.providerKey, providerChargeId: ctx.held.providerChargeId },
      opts,
    ),
  body: (ids, result) => movementBody('capture', 'providerCaptureId', ids, result, {}),
};

/** Every kind of movement. */
export const MOVEMENT_DEFINITIONS: readonly MovementDefinition[] = [REFUND, CAPTURE];

/** The definition of a stored operation name, or undefined for a charge's. */
export function movementDefinition(operation: string): MovementDefinition | undefined {
  return operation === 'refund' ? REFUND : operation === 'capture' ? CAPTURE : undefined;
}
